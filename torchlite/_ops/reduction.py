"""Reductions, scans, softmax and norms.

sum/nansum/mean/nanmean/prod, max/min/amax/amin/aminmax, argmax/argmin, var/std (and
var_mean/std_mean), logsumexp, norm, any/all, count_nonzero, median/nanmedian,
cumsum/cumprod/cummax/cummin/logcumsumexp, softmax/log_softmax, and the linalg norms
vector_norm, matrix_norm and linalg_norm (which torchlite.linalg exposes).

Each op checks its arguments, then calls the array layer (torchlite/_core/reduction.pyx, whose
kernels are in kernels/reduce*.h).  PyTorch's rules hold: bool and integer sums, products and
cumulative sums give int64, float16/bfloat16 accumulate in float32, NaN propagates through
max/min/sum, argmax returns the first index on ties and counts NaN as the largest value."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._dispatch import reduction as _R
from .._tensor import Tensor, _wrap, _wrap_dim
from . import _register
from .elementwise import maximum as _maximum, minimum as _minimum
from ._kit import no_out_with_grad as _no_out_with_grad, result, write_out, tensor_arg
from . import reduction_grad as _G
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import inplace_records, needs_grad, record_not_differentiable
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._dtype import dtype

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax",
           "argmax", "argmin", "var", "std", "var_mean", "std_mean", "logsumexp", "any",
           "all", "count_nonzero", "median", "nanmedian", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp", "softmax", "log_softmax"]

_TORCH_NAMES = _R._TORCH_NAMES


# the named result tuples (torch.return_types)
from .. import return_types  # noqa: E402


# ---- helpers -------------------------------------------------------------------------------
def _arr(input, name):
    tensor_arg(input, name, "input", pos=1)
    return input._data


def _cast_to(a, dtype):
    """a cast to `dtype` (a torchlite dtype or None): PyTorch casts the input before the op."""
    if dtype is None:
        return a
    code = D.to_dtype(dtype).code
    return a if a.dtype == code else _ew.cast(a, code)


def _tracked(input, out, name):
    """Whether this call records a node (called once input requires grad): only with grad
    mode on, and never with out= (PyTorch refuses out= when it would record)."""
    if not needs_grad(input):
        return False
    if out is not None:
        _no_out_with_grad(name, input)
    return True


def _out_pair(pair, out, name, tuple_type):
    """A (values, indices) pair of arrays as the op's named tuple, or written into out=."""
    if out is None:
        return tuple_type(*[_wrap(a) for a in pair])
    return write_out(tuple_type(*pair), out, name)


def _is_float(a):
    return a.dtype >= D.float16.code


def _all_dims(dim):
    return dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0)


def _single_dim(dim, name):
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dim


def _reduced_numel(a, dim):
    """How many elements each output of a reduction over dim combines."""
    if _all_dims(dim):
        return a.numel
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    n = 1
    for d in builtins.set(_wrap_dim(d, a.ndim) for d in dims):
        n *= a.shape[d] if a.ndim else 1
    return n


# ---- sums and products ---------------------------------------------------------------------
def _complex_reduce(reduce, a, dim, keepdim):
    """sum/mean of a complex array: the same reduction of its (..., 2) real parts over the
    same dims, viewed back as complex (the array layer has no complex accumulators)."""
    from .complex import parts_array, complex_array
    if a.ndim == 0:
        return _ew.clone(a)
    dims = tuple(range(a.ndim)) if _all_dims(dim) else tuple(
        _wrap_dim(d, a.ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,)))
    return complex_array(_ew.contiguous(reduce(parts_array(a), dims, keepdim)))


def _sum_like(op, input, dim, keepdim, dtype, out):
    a = _cast_to(_arr(input, op), dtype)
    if a.dtype >= 10 and op in ("sum", "nansum"):
        r = _complex_reduce(lambda x, d, k: _R.reduce(op, x, d, k), a, dim, keepdim)
    else:
        r = _R.reduce(op, a, dim, keepdim)
    if dtype is not None:
        r = _cast_to(r, dtype)
    if input._requires_grad and _tracked(input, out, op):
        if op == "prod":
            return _G.record_prod(input, _wrap(r), dim, keepdim)
        return _G.record_sum(op, input, _wrap(r), dim, keepdim)
    return result(r, out, op, casting="unsafe")


@_register("sum")
def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        dtype: dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Sum over dim (an int, a tuple, or None for every dim).  Bool and integer inputs sum as
    int64; dtype= casts the input first."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(sum, locals())
    return _sum_like("sum", input, dim, keepdim, dtype, out)


@_register("nansum")
def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Sum over dim treating NaN as zero."""
    _no_complex_nan_reduction(input)
    return _sum_like("nansum", input, dim, keepdim, dtype, out)


def _no_complex_nan_reduction(input):
    if isinstance(input, Tensor) and input.is_complex():
        raise RuntimeError("nansum on CPU does not support complex inputs")      # (PyTorch's words)


@_register("prod")
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Product over one dim (or every element when dim is None); integers give int64."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(prod, locals())
    dim = _single_dim(dim, "prod")
    if isinstance(input, Tensor) and (input.is_complex() or (dtype is not None
                                                             and D.to_dtype(dtype).is_complex)):
        return _complex_prod(input, dim, keepdim, dtype, out)
    return _sum_like("prod", input, dim, keepdim, dtype, out)


def _complex_prod(input, dim, keepdim, dtype, out):
    """prod of a complex tensor as a tree of elementwise complex products over halves of the
    reduced dim (log2(n) passes, O(n) work); differentiable through the products."""
    from .joining import cat
    x = input if dtype is None else input.to(D.to_dtype(dtype))
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = _wrap_dim(dim, x.ndim) if x.ndim else None
        if d is None:                       # a 0-d tensor is its own product
            if out is not None:
                return result(x.clone()._data, out, "prod", casting="unsafe")
            return x.clone()
    x = x.movedim(d, -1)
    if x.shape[-1] == 0:
        from .creation import ones
        r = ones(x.shape[:-1], dtype=x.dtype, device=x.device)
    else:
        while x.shape[-1] > 1:
            n, h = x.shape[-1], x.shape[-1] // 2
            y = x[..., :h] * x[..., h:2 * h]
            x = cat([y, x[..., 2 * h:]], -1) if n % 2 else y
        r = x.squeeze(-1)
    if keepdim and dim is not None:
        r = r.unsqueeze(d)
    elif keepdim:
        r = r.reshape((1,) * input.ndim)
    if out is not None:
        return write_out(r, out, "prod")
    return r


def _float_input(input, dtype, name):
    a = _arr(input, name)
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if not dt.is_floating_point:
            raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_TORCH_NAMES[dt.code]}")
        return _cast_to(a, dt)
    if not _is_float(a):
        if name == "nanmean":
            raise RuntimeError(f"nanmean(): expected input to have floating point or complex "
                               f"dtype but got {_TORCH_NAMES[a.dtype]}")
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {_TORCH_NAMES[a.dtype]}")
    return a


@_register("mean")
def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Mean over dim; floating inputs only (or dtype= a floating dtype)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(mean, locals())
    a = _float_input(input, dtype, "mean")
    r = _complex_reduce(_R.mean, a, dim, keepdim) if a.dtype >= 10 else _R.mean(a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, "mean"):
        return _G.record_sum("mean", input, _wrap(r), dim, keepdim)
    return result(r, out, "mean", casting="unsafe")


@_register("nanmean")
def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Mean over dim of the elements that are not NaN (NaN when all are)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(nanmean, locals())
    _no_complex_nan_reduction(input)
    a = _float_input(input, dtype, "nanmean")
    r = _R.mean(a, dim, keepdim, True)
    if input._requires_grad and _tracked(input, out, "nanmean"):
        return _G.record_sum("nanmean", input, _wrap(r), dim, keepdim)
    return result(r, out, "nanmean", casting="unsafe")


# ---- max / min -----------------------------------------------------------------------------
def _max_min(is_min, input, dim, keepdim, out):
    name = "min" if is_min else "max"
    if isinstance(dim, Tensor):            # the binary form max(input, other)
        return (_minimum if is_min else _maximum)(input, dim, out=out)
    a = _arr(input, name)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"(keepdim=bool), keepdim needs a dim")
        r = _R.reduce("amin" if is_min else "amax", a, None, False, name)
        if input._requires_grad and _tracked(input, out, name):
            return _G.record_even(name, input, _wrap(r))
        return result(r, out, name)
    pair = _R.argreduce(is_min, a, _single_dim(dim, name), keepdim, True, name)
    tracked = input._requires_grad and _tracked(input, out, name)
    res = _out_pair(pair, out, name, return_types.min if is_min else return_types.max)
    if tracked:
        _G.record_by_index(name, input, res[0], res[1], dim, keepdim, res)
    return res


@_register("max")
def max(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """max(input): the largest element (0-d).  max(input, dim, keepdim=False): the named tuple
    (values, indices) along dim, the first index on ties.  max(input, other): maximum()."""
    return _max_min(False, input, dim, keepdim, out)


@_register("min")
def min(input: Tensor, dim: int | Tensor | None = None, keepdim: bool = False, *,
        out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """min(input), min(input, dim, keepdim=False) -> (values, indices), min(input, other)."""
    return _max_min(True, input, dim, keepdim, out)


@_register("amax")
def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """The largest value over dim (every dim when empty); NaN propagates."""
    return _amax_amin(False, input, dim, keepdim, out)


@_register("amin")
def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False, *,
         out: Tensor | None = None) -> Tensor:
    """The smallest value over dim (every dim when empty); NaN propagates."""
    return _amax_amin(True, input, dim, keepdim, out)


def _amax_amin(is_min, input, dim, keepdim, out):
    name = "amin" if is_min else "amax"
    a = _arr(input, name)
    r = _R.reduce(name, a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, name):
        return _G.record_amax(is_min, input, _wrap(r), dim, keepdim)
    return result(r, out, name)


@_register("aminmax")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False,
            out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """The named tuple (min, max) over one dim or every element."""
    a = _arr(input, "aminmax")
    if dim is None and a.numel == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is not None:
        d = _wrap_dim(_single_dim(dim, "aminmax"), a.ndim)
        if a.ndim and a.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    lo = _R.reduce("amin", a, dim, keepdim, "aminmax")
    hi = _R.reduce("amax", a, dim, keepdim, "aminmax")
    if input._requires_grad and _tracked(input, out, "aminmax"):
        lo, hi = _wrap(lo), _wrap(hi)
        _G.record_aminmax(input, lo, hi, dim, keepdim)
        return return_types.aminmax(lo, hi)
    return _out_pair((lo, hi), out, "aminmax", return_types.aminmax)


def _arg(is_min, input, dim, keepdim, out):
    name = "argmin" if is_min else "argmax"
    a = _arr(input, name)
    if a.dtype == D.bool.code:
        raise RuntimeError(f"{name}(): does not support bool input")
    _, idx = _R.argreduce(is_min, a, _single_dim(dim, name), keepdim, False, name)
    return result(idx, out, name)


@_register("argmax")
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | None = None) -> Tensor:
    """Index of the largest value over dim (of the flattened input when dim is None): the
    first one on ties, and NaN counts as the largest."""
    return _arg(False, input, dim, keepdim, out)


@_register("argmin")
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | None = None) -> Tensor:
    """Index of the smallest value over dim (flattened when None); the first on ties."""
    return _arg(True, input, dim, keepdim, out)


# ---- variance ------------------------------------------------------------------------------
def _var_args(name, input, dim, unbiased, keepdim, correction):
    """Resolve var/std's overloads: (input, dim, *, correction, keepdim),
    (input, dim, unbiased, keepdim) and (input, unbiased)."""
    if isinstance(dim, builtins.bool):
        if unbiased is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both "
                        f"'unbiased' and 'correction'")
    if correction is None:
        correction = 0 if unbiased is False else 1
    a = _arr(input, name)
    if not _is_float(a):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    correction = builtins.float(correction)
    if _reduced_numel(a, dim) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=3)
    return a, dim, correction


def _var_std(name, take_sqrt, want_mean, input, dim, unbiased, keepdim, correction, out):
    a, dim, correction = _var_args(name, input, dim, unbiased, keepdim, correction)
    if a.dtype >= 10:
        return _complex_var_std(name, take_sqrt, want_mean, input, a, dim, keepdim, correction, out)
    v, m = _R.var(a, dim, correction, keepdim, take_sqrt, want_mean)
    if input._requires_grad and _tracked(input, out, name):
        res = (_wrap(v), _wrap(m)) if want_mean else _wrap(v)
        return _G.record_var(input, res, dim, keepdim, correction, take_sqrt, want_mean)
    if want_mean:
        if out is not None:
            return write_out((v, m), out, name, casting="unsafe")
        return _wrap(v), _wrap(m)
    return result(v, out, name, casting="unsafe")


def _complex_var_std(name, take_sqrt, want_mean, input, a, dim, keepdim, correction, out):
    """var of a complex tensor as PyTorch defines it: the mean squared modulus of the
    deviations, sum(|z - mean|^2) / max(0, N - correction), a real tensor (var(real) +
    var(imag)); composed of recorded ops, so it is differentiable."""
    dims = None if _all_dims(dim) else dim
    if out is not None and input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        _no_out_with_grad(name, input)
    m = input.mean() if dims is None else input.mean(dims, keepdim=True)
    d = input - m
    sq = d.real * d.real + d.imag * d.imag
    total = sq.sum() if dims is None else sq.sum(dims, keepdim=keepdim)
    v = total / builtins.max(0.0, _reduced_numel(a, dim) - correction)
    if take_sqrt:
        v = v.sqrt()
    if keepdim and dims is None:
        v = v.reshape((1,) * input.ndim)
    if want_mean:
        mean = m if (keepdim or dims is None) else input.mean(dims)
        if keepdim and dims is None:
            mean = mean.reshape((1,) * input.ndim)
        return write_out((v._data, mean._data), out, name, casting="unsafe") if out is not None \
            else (v, mean)
    return v if out is None else result(v._data, out, name, casting="unsafe")


@_register("var")
def var(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: int | float | None = None,
        out: Tensor | None = None) -> Tensor:
    """Variance over dim: sum((x - mean)^2) / max(0, N - correction); correction=1 (Bessel)
    by default, unbiased=False means correction=0."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(var, locals())
    return _var_std("var", False, False, input, dim, unbiased, keepdim, correction, out)


@_register("std")
def std(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: int | float | None = None,
        out: Tensor | None = None) -> Tensor:
    """Standard deviation over dim: sqrt(var(...))."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(std, locals())
    return _var_std("std", True, False, input, dim, unbiased, keepdim, correction, out)


def var_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: int | float | None = None,
             out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(var, mean) over dim, from one mean."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(var_mean, locals())
    return _var_std("var_mean", False, True, input, dim, unbiased, keepdim, correction, out)


def std_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: int | float | None = None,
             out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(std, mean) over dim, from one mean."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(std_mean, locals())
    return _var_std("std_mean", True, True, input, dim, unbiased, keepdim, correction, out)


# ---- logsumexp, any/all, count_nonzero -----------------------------------------------------
@_register("logsumexp")
def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False, *,
              out: Tensor | None = None) -> Tensor:
    """log(sum(exp(input))) over dim, computed stably (the max is taken out first); integer
    inputs give the default float dtype."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(logsumexp, locals())
    a = _arr(input, "logsumexp")
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not "
                        "NoneType")
    if not _is_float(a):
        a = _ew.cast(a, _ew.get_default_float())
    if a.dtype >= 10:           # complex: the largest real part taken out, recorded ops
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        m = input.real.detach().amax(tuple(dims), keepdim=True)
        m = m.masked_fill(~m.isfinite(), 0.0)
        r = (input - m).exp().sum(tuple(dims), keepdim=True).log() + m
        r = r if keepdim else r.squeeze(tuple(_wrap_dim(d, input.ndim) for d in dims))
        return r if out is None else result(r._data, out, "logsumexp", casting="unsafe")
    r = _R.logsumexp(a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, "logsumexp"):
        return _G.record_logsumexp(input, _wrap(r), dim, keepdim)
    return result(r, out, "logsumexp", casting="unsafe")


def _nonzero_of(a):
    """a, or for a complex a the bool array a != 0 (the kernels test one real per element)."""
    return _ew.binary(_ew.BINARY["ne"], a, 0) if a.dtype >= 10 else a


def _any_all(op, input, dim, keepdim, out):
    a = _nonzero_of(_arr(input, op))
    r = _R.reduce(op, a, dim, keepdim)
    if out is not None and out._data.dtype != r.dtype:
        raise RuntimeError(f"{op} only supports bool tensor for result, got: "
                           f"{_TORCH_NAMES[out._data.dtype]}")
    return result(r, out, op, casting="unsafe")


@_register("any")
def any(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor:
    """True where any element over dim is nonzero (uint8 inputs give uint8)."""
    return _any_all("any", input, dim, keepdim, out)


@_register("all")
def all(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor:
    """True where every element over dim is nonzero (uint8 inputs give uint8)."""
    return _any_all("all", input, dim, keepdim, out)


@_register("count_nonzero")
def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The number of nonzero elements over dim, as int64 (NaN counts as nonzero)."""
    return _wrap(_R.reduce("count_nonzero", _nonzero_of(_arr(input, "count_nonzero")), dim, False))


# ---- median --------------------------------------------------------------------------------
def _median(name, ignore_nan, input, dim, keepdim, out):
    a = _arr(input, name)
    v, i = _R.median(a, dim, keepdim, ignore_nan, name)
    tracked = input._requires_grad and _tracked(input, out, name)
    if dim is None:
        if v is None:                      # the median of nothing is NaN
            v = _A.full((), math.nan, a.dtype if _is_float(a) else _ew.get_default_float(), device=a)
        if tracked:
            return _G.record_even(name, input, _wrap(v))
        return result(v, out, name, casting="unsafe")
    res = _out_pair((v, i), out, name, getattr(return_types, name))
    if tracked:
        _G.record_by_index(name, input, res[0], res[1], dim, keepdim, res)
    return res


@_register("median")
def median(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """median(input): the lower median of every element.  median(input, dim, keepdim=False):
    the named tuple (values, indices) along dim.  NaN propagates."""
    return _median("median", False, input, dim, keepdim, out)


@_register("nanmedian")
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
              out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """median() ignoring NaN (NaN only where every element is NaN)."""
    return _median("nanmedian", True, input, dim, keepdim, out)


# ---- scans ---------------------------------------------------------------------------------
def _scan_array(op, a, dim):
    """The scan kernel; a complex cumsum runs over the (..., 2) real parts (the same dim)."""
    if a.dtype >= 10 and op == "cumsum":
        from .complex import parts_array, complex_array
        d = _wrap_dim(dim, a.ndim) if a.ndim else 0
        parts = parts_array(a) if a.ndim else parts_array(a.unsqueeze(0))
        r = complex_array(_ew.contiguous(_R.scan(op, parts, d)))
        return r if a.ndim else r.squeeze((0,))
    return _R.scan(op, a, dim)


def _scan(op, input, dim, dtype, out):
    a = _cast_to(_arr(input, op), dtype)
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not NoneType")
    if a.dtype >= 10 and op == "cumprod":
        r = _complex_cumprod(input if dtype is None else input.to(dtype), dim)
        return r if out is None else result(r._data, out, op, casting="unsafe")
    r = _scan_array(op, a, dim)
    if dtype is not None:
        r = _cast_to(r, dtype)
    if input._requires_grad and _tracked(input, out, op):
        return _G.record_scan(op, input, _wrap(r), dim)
    return result(r, out, op, casting="unsafe")


def _complex_cumprod(x, dim):
    """cumprod of a complex tensor by Hillis and Steele's scan: log2(n) rounds, each multiplying
    every element by the running product `shift` places before it (the same factors as the
    sequential product, associated differently); recorded ops, so differentiable."""
    if x.ndim == 0:
        return x.clone()
    d = _wrap_dim(dim, x.ndim)
    n = x.shape[d]
    r, shift = x, 1
    from .joining import cat
    while shift < n:
        r = cat([r.narrow(d, 0, shift), r.narrow(d, shift, n - shift) * r.narrow(d, 0, n - shift)], d)
        shift *= 2
    return r if r is not x else x.clone()


@_register("cumsum")
def cumsum(input: Tensor, dim: int, *, dtype: dtype | None = None,
           out: Tensor | None = None) -> Tensor:
    """Cumulative sum along dim (bool and integers give int64; float32 accumulates in
    float64)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cumsum, locals())
    return _scan("cumsum", input, dim, dtype, out)


@_register("cumprod")
def cumprod(input: Tensor, dim: int, *, dtype: dtype | None = None,
            out: Tensor | None = None) -> Tensor:
    """Cumulative product along dim (bool and integers give int64)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(cumprod, locals())
    return _scan("cumprod", input, dim, dtype, out)


@_register("logcumsumexp")
def logcumsumexp(input: Tensor, dim: int, *, out: Tensor | None = None) -> Tensor:
    """log(cumsum(exp(input))) along dim, computed stably; floating inputs only."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(logcumsumexp, locals())
    return _scan("logcumsumexp", input, dim, None, out)


def _scan_inplace(op, self, dim, dtype):
    if inplace_records(self):
        from .elementwise_grad import check_inplace, rebase_inplace
        check_inplace(self, op + "_")
        return rebase_inplace(self, lambda old: _scan(op, old, dim, dtype, None))
    r = _scan_array(op, _cast_to(self._data, dtype), dim)
    _ew.copy_(self._data, r)
    self._bump_version()
    return self


@_register("cumsum_")
def cumsum_(self, dim, *, dtype=None):
    """In-place cumsum."""
    return _scan_inplace("cumsum", self, dim, dtype)


@_register("cumprod_")
def cumprod_(self, dim, *, dtype=None):
    """In-place cumprod."""
    return _scan_inplace("cumprod", self, dim, dtype)


def _cum_arg(is_min, input, dim, out):
    name = "cummin" if is_min else "cummax"
    pair = _R.scan_arg(is_min, _arr(input, name), dim)
    tracked = input._requires_grad and _tracked(input, out, name)
    res = _out_pair(pair, out, name, return_types.cummin if is_min else return_types.cummax)
    if tracked:
        _G.record_cum_arg(is_min, input, res[0], res[1], dim, res)
    return res


@_register("cummax")
def cummax(input: Tensor, dim: int, *,
           out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of the running maximum along dim (the later index on ties; NaN
    sticks once met), as PyTorch."""
    return _cum_arg(False, input, dim, out)


@_register("cummin")
def cummin(input: Tensor, dim: int, *,
           out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of the running minimum along dim."""
    return _cum_arg(True, input, dim, out)


# ---- softmax -------------------------------------------------------------------------------
def _softmax(log, input, dim, dtype):
    name = "log_softmax" if log else "softmax"
    a = _cast_to(_arr(input, name), dtype)
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not NoneType")
    r = _wrap(_R.softmax(a, dim, log))
    if input._requires_grad and (_grad_state.enabled or needs_grad(input)):
        return _G.record_softmax(log, input, r, dim)
    return r


@_register("softmax")
def softmax(input: Tensor, dim: int, dtype: dtype | None = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along dim, fused per row; dtype= casts the input
    first.  float16/bfloat16 compute in float32."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(softmax, locals())
    return _softmax(False, input, dim, dtype)


@_register("log_softmax")
def log_softmax(input: Tensor, dim: int, dtype: dtype | None = None) -> Tensor:
    """x - max - log(sum(exp(x - max))) along dim."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(log_softmax, locals())
    return _softmax(True, input, dim, dtype)


# ---- norms ---------------------------------------------------------------------------------
def _norm_input(name, x, dtype):
    a = _arr(x, name)
    if not _is_float(a):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_TORCH_NAMES[a.dtype]}")
    if dtype is not None:
        dt = D.to_dtype(dtype)
        if _ew.promote(a.dtype, dt.code) != dt.code:
            raise RuntimeError(f"{name}: the dtype of the input ({_TORCH_NAMES[a.dtype]}) should "
                               f"be convertible without narrowing to the specified dtype "
                               f"({_TORCH_NAMES[dt.code]})")
        a = _cast_to(a, dt)
    return a


def _ord_value(ord, name):
    if isinstance(ord, str) or not isinstance(ord, (builtins.int, builtins.float)):
        try:
            return builtins.float(ord)
        except (TypeError, ValueError):
            raise TypeError(f"{name}(): argument 'ord' (position 2) must be Number, not "
                            f"{type(ord).__name__}") from None
    return builtins.float(ord)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch.linalg.vector_norm: (sum |x|^ord)^(1/ord) over dim (every element when None);
    ord inf/-inf are max/min |x|, ord 0 counts the nonzeros.  Complex x: the norm of |x|."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(vector_norm, locals())
    if isinstance(x, Tensor) and x.is_complex():
        if dtype is not None and not D.to_dtype(dtype).is_complex:
            raise RuntimeError(f"linalg.vector_norm: dtype should be complex for a complex "
                               f"input, got {dtype}")
        return vector_norm(x.abs(), ord, dim, keepdim,
                           dtype=None if dtype is None else D.to_dtype(dtype).to_real(), out=out)
    p = _ord_value(ord, "linalg_vector_norm")
    a = _norm_input("linalg.vector_norm", x, dtype)
    return p_norm(x, a, p, dim, keepdim, out, "linalg.vector_norm")


def p_norm(x, a, p, dim, keepdim, out, name):
    """The p-norm kernel over dim of x's (checked, cast) array a, its node, and out=: the core
    of vector_norm, shared with linalg's matrix_norm ('fro', and 1/inf's column/row sums)."""
    r = _R.vector_norm(a, p, dim, keepdim, name)
    if x._requires_grad and _tracked(x, out, name):
        return _G.record_norm(x, _wrap(r), p, dim, keepdim)
    return result(r, out, name, casting="unsafe")


# ---- order statistics, histograms and covariance (composed of the ops above and of sort,
# gather, searchsorted and index_add, so their gradients come from those ops) ------------------
def _pw():
    from . import elementwise
    return elementwise


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_q(name, q, dtype, device):
    """q as a 1-D tensor of input's dtype (on `device` when it is a number), and whether the
    result drops its q dim."""
    from .creation import tensor
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qs = q.reshape(-1)      # not detached: linear interpolation is differentiable in q
        if qs.numel() and not builtins.bool(((qs.detach() >= 0) & (qs.detach() <= 1)).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        return qs, q.ndim == 0
    v = builtins.float(q)
    if not 0.0 <= v <= 1.0:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {v}")
    return tensor([v], dtype=dtype, device=device), True


def _quantile(name, ignore_nan, input, q, dim, keepdim, interpolation, out):
    _arr(input, name)
    if input.dtype not in (D.float32, D.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint "
                           f"or nearest, but got {interpolation}")
    qs, scalar_q = _quantile_q(name, q, input.dtype, input.device)
    pw = _pw()
    if dim is None or input.ndim == 0:
        d = None if dim is None else _wrap_dim(dim, 0)
        rows = input.reshape(-1)
    else:
        d = _wrap_dim(dim, input.ndim)
        rows = input.movedim(d, -1)
    s = rows.sort(-1).values                        # NaN sorts last
    n = s.shape[-1]
    nan_last = pw.isnan(s.narrow(-1, n - 1, 1))
    if ignore_nan:
        valid = pw.logical_not(pw.isnan(s.detach())).sum(-1, keepdim=True)
        rank = (valid - 1).to(input.dtype) * qs
        rank = pw.where(rank < 0, builtins.float(n - 1), rank)     # all NaN: pick a NaN
    else:
        rank = pw.where(nan_last, builtins.float(n - 1), (n - 1) * qs)   # any NaN: the result is NaN
    r = _quantile_pick(s, rank, interpolation)
    r = r.movedim(-1, 0)                            # (q, the other dims)
    if keepdim:
        if dim is None:
            r = r.reshape((r.shape[0],) + (1,) * input.ndim)
        elif input.ndim:
            r = r.unsqueeze(d + 1)
    if scalar_q:
        r = r.select(0, 0)
    if out is None:
        return r
    _no_out_with_grad(name, input)
    return write_out(r, out, name, casting="unsafe")


def _quantile_pick(s, rank, interpolation):
    """The values of sorted rows s at fractional positions rank (..., q)."""
    pw = _pw()
    if interpolation in ("lower", "higher", "nearest"):
        at = {"lower": pw.floor, "higher": pw.ceil, "nearest": pw.round}[interpolation](rank)
        return s.gather(-1, at.long())
    lo = pw.floor(rank)
    below, above = s.gather(-1, lo.long()), s.gather(-1, pw.ceil(rank).long())
    # midpoint: 0.5 (NaN stays NaN), no gradient to q, as in PyTorch
    weight = pw.where(rank == rank, 0.5, rank.detach()) if interpolation == "midpoint" \
        else rank - lo
    return pw.lerp(below, above, weight)


@_register("quantile")
def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """The q-th quantiles of input (over all elements, or along dim); q is a number or a 1-D
    tensor (its dim leads the result).  A row with a NaN gives NaN."""
    return _quantile("quantile", False, input, q, dim, keepdim, interpolation, out)


@_register("nanquantile")
def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """quantile ignoring NaN (a row of only NaN gives NaN)."""
    return _quantile("nanquantile", True, input, q, dim, keepdim, interpolation, out)


@_register("bincount")
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How many times each value 0..max(input) occurs in a 1-D non-negative integer tensor
    (the sum of `weights` at those positions when given); at least minlength bins."""
    from .creation import zeros
    _arr(input, "bincount")
    if input.is_floating_point() or input.dtype is D.bool:
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{_TORCH_NAMES[input._data.dtype]}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim != 1 or (input.numel() and builtins.int(input.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (not isinstance(weights, Tensor) or weights.ndim != 1
                                or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    size = builtins.max(builtins.int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        dt, values = D.int64, None
    else:
        dt = weights.dtype if weights.dtype in (D.float32, D.float64) else D.float64
        values = weights.detach().to(dt)
    counts = zeros(size, dtype=dt, device=input.device)
    if input.numel():
        from .creation import ones
        counts.index_add_(0, input.long(), ones(input.shape[0], dtype=dt, device=input.device)
                          if values is None else values)
    if weights is not None and _pw()._G.needs_grad(weights):
        record_not_differentiable("bincount", (None, weights), counts)
    return counts


def _bin_counts(x, edges, weight):
    """Counts (or summed weights) of x in the bins edges[i] <= v < edges[i+1], the last bin
    closed; values outside [edges[0], edges[-1]] and NaN are left out."""
    return _bin_counts_nd(x.reshape(-1, 1), [edges], weight).reshape(-1)


def _bin_counts_nd(x, edges, weight):
    """The same over the D columns of x (N, D), edges one 1-d tensor per column: a
    (len(edges[0]) - 1, ..., len(edges[D-1]) - 1) tensor of x's dtype."""
    from .sorting import searchsorted
    pw = _pw()
    shape = [e.shape[0] - 1 for e in edges]
    inside, linear = None, None
    for d, e in enumerate(edges):
        col = x.select(1, d).contiguous()
        ok = (col >= e[0]) & (col <= e[-1])
        at = pw.clamp(searchsorted(e, col, right=True) - 1, 0, shape[d] - 1)
        inside = ok if inside is None else inside & ok
        linear = at if linear is None else linear * shape[d] + at
    n_bins = 1
    for b in shape:
        n_bins *= b
    w = None if weight is None else weight.reshape(-1).detach().masked_select(inside).to(D.float64)
    return bincount(linear.masked_select(inside), w, minlength=n_bins).to(x.dtype).reshape(shape)


def _checked_bins(bins, op):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    return builtins.int(bins)


@_register("histc")
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *,
          out: Tensor | None = None) -> Tensor:
    """Histogram of input's values in `bins` equal bins over [min, max] (the data's own range
    when both are 0); values outside are ignored.  Counts have input's dtype."""
    from .creation import linspace
    _arr(input, "histc")
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogram_cpu" not implemented for '
                                  f"'{_TORCH_NAMES[input._data.dtype]}'")
    bins = _checked_bins(bins, "histc")
    lo, hi = builtins.float(min), builtins.float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    x = input.detach()
    if x.is_meta:                   # no values to count: the counts' shape and dtype
        r = x.new_zeros((bins,))
        return r if out is None else write_out(r, out, "histc", casting="unsafe")
    if lo == hi and x.numel():
        lo, hi = builtins.float(x.min()), builtins.float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    r = _bin_counts(x, linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device), None)
    if out is None:
        return r
    return write_out(r, out, "histc", casting="unsafe")


@_register("histogram")
def histogram(input: Tensor, bins: int | Tensor, *, range: Sequence[float] | None = None,
              weight: Tensor | None = None, density: bool = False,
              out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """(hist, bin_edges): counts (or summed weights) of input in `bins` equal bins over range
    (the data's range by default), or in the bins between the edges of a 1-D tensor `bins`.
    density=True divides by the total and the bin widths."""
    from .creation import linspace
    from .. import return_types as _rt
    _arr(input, "histogram")
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{_TORCH_NAMES[input._data.dtype]}'")
    x = input.detach()
    if isinstance(bins, Tensor):
        edges = bins.detach().to(input.dtype)
    else:
        n = _checked_bins(bins, "histogram")
        if range is not None:
            lo, hi = builtins.float(range[0]), builtins.float(range[1])
        elif x.numel():
            lo, hi = builtins.float(x.min()), builtins.float(x.max())
        else:
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                               f"max {hi:g} for dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, n + 1, dtype=input.dtype, device=input.device)
    hist = _bin_counts(x, edges, weight)
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    cls = getattr(_rt, "histogram", None) or _rt._make("histogram", ("hist", "bin_edges"))
    if out is not None:
        return write_out(cls(hist, edges), out, "histogram", casting="unsafe")
    if _pw()._G.needs_grad(input, weight):
        record_not_differentiable("histogram", (input,), (hist, edges))
    return cls(hist, edges)


def _check_histogram_size(counts):
    """Refuse a histogram whose bins could not be counted (before any edge is made)."""
    from .._size import check_numel
    total = 1
    for c in counts:
        if isinstance(c, builtins.int) and c > 0:
            total *= c
    if total >= 2 ** 62:
        raise RuntimeError(f"torch.histogramdd: {'x'.join(str(c) for c in counts)} bins are too many to count")
    check_numel((total,), "histogramdd")


def histogramdd(input: Tensor, bins: int | Sequence[int] | Sequence[Tensor] = 10, *,
                range: Sequence[float] | None = None, weight: Tensor | None = None,
                density: bool = False) -> tuple[Tensor, list[Tensor]]:
    """(hist, bin_edges) of the points input (*, D): an integer or one per dim for equal bins
    over range (a flat list of D (min, max) pairs; the data's range by default), or one 1-d
    tensor of edges per dim.  density=True divides by the total and each bin's volume."""
    from .creation import linspace
    from .. import return_types as _rt
    _arr(input, "histogramdd")
    if not input.is_floating_point():
        raise NotImplementedError(f'"histogramdd" not implemented for '
                                  f"'{_TORCH_NAMES[input._data.dtype]}'")
    if input.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension, but got 0")
    dims = input.shape[-1]
    x = input.detach().reshape(-1, dims)
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape "
                           f"as the input tensor excluding its innermost dimension, but got input with shape "
                           f"{list(input.shape)} and weight with shape {list(weight.shape)}")
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor):
        if len(bins) != dims:
            raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for each of the "
                               f"{dims} dimensions of input, but got {len(bins)}")
        edges = [b.detach().to(input.dtype) for b in bins]
        _check_histogram_size([e.shape[0] - 1 for e in edges])
    else:
        counts = [bins] * dims if isinstance(bins, builtins.int) else builtins.list(bins)
        if len(counts) != dims:
            raise RuntimeError(f"torch.histogramdd: expected {dims} bin counts for each of the {dims} "
                               f"dimensions of input, but got {len(counts)}")
        _check_histogram_size(counts)
        if range is not None and len(range) != 2 * dims:
            raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have "
                               f"{2 * dims} elements, but got {len(range)}")
        edges = []
        for d, n in enumerate(counts):
            if n <= 0:
                raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {n} for dimension {d}")
            col = x.select(1, d)
            if range is not None:
                lo, hi = builtins.float(range[2 * d]), builtins.float(range[2 * d + 1])
            elif col.numel():
                lo, hi = builtins.float(col.min()), builtins.float(col.max())
            else:
                lo, hi = 0.0, 1.0
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max "
                                   f"{hi:g} for dimension {d}")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(linspace(lo, hi, builtins.int(n) + 1, dtype=input.dtype, device=input.device))
    hist = _bin_counts_nd(x, edges, weight)
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = (e[1:] - e[:-1]).reshape([-1 if i == d else 1 for i in builtins.range(dims)])
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    if _pw()._G.needs_grad(input, weight):
        record_not_differentiable("histogramdd", (input,), (hist, *edges))
    cls = getattr(_rt, "histogramdd", None) or _rt._make("histogramdd", ("hist", "bin_edges"))
    return cls(hist, edges)


def _observation_weights(fweights, aweights, n):
    """fweights * aweights (either may be None), checked as PyTorch checks them."""
    w = None
    for name, t, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if t is None:
            continue
        if t.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {t.ndim} dimensions")
        if t.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {t.numel()} != {n}")
        if integral and t.is_floating_point():
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights "
                               f"with {_TORCH_NAMES[t._data.dtype]} dtype")
        if not integral and not t.is_floating_point():
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_TORCH_NAMES[t._data.dtype]} dtype")
        if t.numel() and builtins.float(t.min()) < 0:
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = t if w is None else w * t
    return w


@_register("cov")
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance matrix of the variables in input's rows (observations in columns; a 1-D
    input is one variable).  fweights: integer repeat counts, aweights: float importance
    weights of the observations; correction: 1 for the unbiased estimate, 0 for the plain
    mean of squares."""
    _arr(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype is D.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(D.DTYPES[_ew.get_default_float()])
    n = x.shape[1]
    w = _observation_weights(fweights, aweights, n)
    if w is None:
        w_sum = n
        avg = x.mean(1)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = n - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    if builtins.float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the number of observations.", RuntimeWarning)
        norm = 0 if not isinstance(norm, Tensor) else norm.clamp_min(0)
    xm = x - avg.unsqueeze(1)
    c = xm.matmul((xm if w is None else xm * w).t().conj())     # (conj: complex variables)
    return (c / norm).to(x.dtype).squeeze()


@_register("corrcoef")
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in input's rows (cov normalised by
    the standard deviations, clipped to [-1, 1])."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    std = (c.diagonal().real if c.is_complex() else c.diagonal()).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c.is_complex():                  # each part clipped, as PyTorch
        from .complex import complex as _complex
        return _complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


@_register("renorm")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float, *,
           out: Tensor | None = None) -> Tensor:
    """Each slice input.select(dim, i) whose p-norm exceeds maxnorm is scaled down to norm
    maxnorm (divided by norm + 1e-7, as PyTorch does)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(renorm, locals())
    _arr(input, "renorm")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    if not input.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_TORCH_NAMES[input._data.dtype]}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _wrap_dim(dim, input.ndim)
    others = [i for i in builtins.range(input.ndim) if i != d]
    norms = vector_norm(input, p, others, keepdim=True)
    factor = _pw().where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    r = input * factor.to(input.dtype)
    if out is None:
        return r
    _no_out_with_grad("renorm", input)
    return write_out(r, out, "renorm", casting="unsafe")


@_register("renorm_")
def renorm_(self, p, dim, maxnorm):
    """In-place version of :func:`renorm`."""
    return _pw()._inplace_via(self, lambda old: renorm(old, p, dim, maxnorm), "renorm_")


__all__ += ["quantile", "nanquantile", "bincount", "histc", "histogram", "histogramdd", "cov", "corrcoef",
            "renorm"]


# ---- trapezoid rule --------------------------------------------------------------------------
def _trapezoid_parts(y, x, dx, dim, name):
    tensor_arg(y, name, "y")
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: x and dx")
    if y.ndim == 0:
        raise IndexError(f"{name}: Dimension out of range (expected to be in range of [-1, 0], "
                         f"but got {dim})")
    d = _wrap_dim(dim, y.ndim)
    n = y.shape[d]
    left, right = y.narrow(d, 0, builtins.max(n - 1, 0)), y.narrow(d, builtins.min(1, n),
                                                                   builtins.max(n - 1, 0))
    if x is None:
        spacing = 1.0 if dx is None else dx
        return (left + right) * (spacing * 0.5), d
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        dxs = (x[1:] - x[:-1]).reshape((-1,) + (1,) * (y.ndim - 1 - d))
    else:
        dxs = x.narrow(d, 1, builtins.max(n - 1, 0)) - x.narrow(d, 0, builtins.max(n - 1, 0))
    return (left + right) * dxs * 0.5, d


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
              dim: int = -1) -> Tensor:
    """The integral of y along dim by the trapezoid rule, samples spaced by dx (default 1)
    or at the points x (1-d, or shaped like y)."""
    parts, d = _trapezoid_parts(y, x, dx, dim, "trapezoid")
    return parts.sum(d)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """The older name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """The running integrals of trapezoid along dim (one fewer than the samples)."""
    parts, d = _trapezoid_parts(y, x, dx, dim, "cumulative_trapezoid")
    return parts.cumsum(d)


__all__ += ["trapezoid", "trapz", "cumulative_trapezoid"]


def gradient(input: Tensor, *, spacing: float | Tensor | Sequence[float | Tensor] | None = 1,
             dim: int | Sequence[int] | None = None, edge_order: int = 1) -> tuple[Tensor, ...]:
    """Estimates of input's derivative along each dim in `dim` (all by default), one tensor per
    dim: central differences inside (second order, also between unevenly spaced coordinates)
    and one-sided differences of order edge_order (1 or 2) at the ends.  spacing: one number
    for every dim, one per dim, or one 1-d tensor of coordinates per dim (numpy.gradient's
    rules)."""
    _arr(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = builtins.list(builtins.range(input.ndim)) if dim is None else (
        [dim] if isinstance(dim, builtins.int) else builtins.list(dim))
    dims = [_wrap_dim(d, input.ndim) for d in dims]
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (builtins.int, builtins.float)) or (isinstance(spacing, Tensor) and spacing.ndim == 0):
        spacing = [spacing] * len(dims)
    spacing = builtins.list(spacing)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                           f"dim arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {len(dims)}.")
    x = input if input.is_floating_point() or input.is_complex() else input.to(D.get_default_dtype())
    return tuple(_gradient_along(x, d, h, edge_order) for d, h in zip(dims, spacing))


def _gradient_along(x, d, h, edge_order):
    n = x.shape[d]
    if n < edge_order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")

    def part(start, length):
        return x.narrow(d, start, length)
    if isinstance(h, Tensor) and h.ndim == 1:                   # coordinates
        if h.shape[0] != n:
            raise RuntimeError(f"torch.gradient expected each tensor to be on the same device and have "
                               f"{n} elements (the size of dimension {d}), got {h.shape[0]}")
        shape = [1] * x.ndim
        shape[d] = -1
        c = h.to(x.dtype).reshape(shape)
        dx = c.narrow(d, 1, n - 1) - c.narrow(d, 0, n - 1)       # n - 1 gaps
        hl, hr = dx.narrow(d, 0, n - 2), dx.narrow(d, 1, n - 2)
        inner = (hl * hl * part(2, n - 2) - hr * hr * part(0, n - 2) + (hr * hr - hl * hl) * part(1, n - 2)) / (
            hl * hr * (hl + hr))
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / dx.narrow(d, 0, 1)
            last = (part(n - 1, 1) - part(n - 2, 1)) / dx.narrow(d, n - 2, 1)
        else:
            h1, h2 = dx.narrow(d, 0, 1), dx.narrow(d, 1, 1)
            first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * part(0, 1) + (h1 + h2) / (h1 * h2) * part(1, 1)
                     - h1 / (h2 * (h1 + h2)) * part(2, 1))
            h1, h2 = dx.narrow(d, n - 2, 1), dx.narrow(d, n - 3, 1)
            last = (h1 / (h2 * (h1 + h2)) * part(n - 3, 1) - (h1 + h2) / (h1 * h2) * part(n - 2, 1)
                    + (2 * h1 + h2) / (h1 * (h1 + h2)) * part(n - 1, 1))
    else:
        step = h.item() if isinstance(h, Tensor) else h
        inner = (part(2, n - 2) - part(0, n - 2)) / (2 * step)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / step
            last = (part(n - 1, 1) - part(n - 2, 1)) / step
        else:
            first = (-1.5 * part(0, 1) + 2 * part(1, 1) - 0.5 * part(2, 1)) / step
            last = (0.5 * part(n - 3, 1) - 2 * part(n - 2, 1) + 1.5 * part(n - 1, 1)) / step
    from .joining import cat
    return cat([first, inner, last], d) if n > 2 else cat([first, last], d)


__all__ += ["gradient"]


# ---- segment_reduce: reductions over consecutive runs along one dim --------------------------------
_SEGMENT_REDUCTIONS = {"sum": ("sum", 0.0), "prod": ("prod", 1.0), "mean": ("mean", math.nan),
                       "max": ("amax", -math.inf), "min": ("amin", math.inf)}


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial: float | None = None) -> Tensor:
    """torch.segment_reduce: data split along `axis` into consecutive segments of the given
    lengths (or between consecutive offsets), each reduced with reduce ('sum', 'mean', 'max',
    'min', 'prod').  lengths may carry leading batch dims matching data's; axis is then
    lengths.ndim - 1.  An empty segment gives `initial`, or the reduction's value over nothing
    (0, NaN, -inf, inf, 1); a given initial also joins every non-empty segment, as PyTorch's.
    Differentiable (a scatter_reduce of the segment ids)."""
    from .creation import arange, full
    from .indexing import scatter_reduce
    from .sorting import searchsorted
    op = "segment_reduce"
    tensor_arg(data, op, "data")
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"{op}(): unsupported reduction {reduce!r}; expected one of "
                           f"{', '.join(_SEGMENT_REDUCTIONS)}")
    if indices is not None:
        raise RuntimeError(f"{op}(): indices based reduction is not supported yet.")
    if (lengths is None) == (offsets is None):
        raise RuntimeError(f"{op}(): Either lengths or offsets must be defined, and not both.")
    if offsets is not None:
        tensor_arg(offsets, op, "offsets")
        lengths = offsets[..., 1:] - offsets[..., :-1]
    tensor_arg(lengths, op, "lengths")
    if lengths.ndim < 1:
        raise RuntimeError(f"{op}(): lengths must have at least one dimension")
    axis = _wrap_dim(axis, data.ndim)
    if axis != lengths.ndim - 1:
        raise RuntimeError(f"{op}(): Expected axis to be the last dimension of lengths but got "
                           f"{axis}.")
    if tuple(data.shape[:axis]) != tuple(lengths.shape[:-1]):
        raise RuntimeError(f"{op}(): Expected data and lengths to have the same leading dims, got "
                           f"{tuple(data.shape)} and {tuple(lengths.shape)}")
    lengths = lengths.to(D.int64)
    if data.is_meta or lengths.is_meta:     # the shape needs the segments' count, not lengths
        from .creation import empty
        return empty(tuple(lengths.shape) + tuple(data.shape[axis + 1:]), dtype=data.dtype, device="meta")
    if not unsafe:
        if bool((lengths < 0).any()):
            raise RuntimeError(f"{op}(): lengths contains negative value!")
        if bool((lengths.sum(-1) != data.shape[axis]).any()):
            raise RuntimeError(f"{op}(): Expected all rows of lengths along axis to sum to "
                               f"data.size(lengths.dim()-1) when !unsafe.")
    lead, n_seg, n = tuple(lengths.shape[:-1]), lengths.shape[-1], data.shape[axis]
    rest = tuple(data.shape[axis + 1:])
    b = math.prod(lead)
    width = math.prod(rest)
    x = data.reshape(b, n, width)
    ends = lengths.reshape(b, n_seg).cumsum(-1)
    # position t belongs to the segment whose cumulative end is the first one above t
    ids = searchsorted(ends, arange(n, device=data.device).expand(b, n).contiguous(), right=True)
    name, empty = _SEGMENT_REDUCTIONS[reduce]
    # positions past the last segment (unsafe lengths that sum short of the axis) land in one
    # more, dropped, segment
    index = ids.unsqueeze(-1).expand(b, n, width)
    shape = (b, n_seg + 1, width)
    if reduce == "mean" and initial is not None:
        # PyTorch's mean with an initial: (initial + the segment's sum) / its length, and the
        # initial itself for an empty segment
        total = scatter_reduce(full(shape, initial, dtype=data.dtype, device=data.device), 1,
                               index, x, "sum")[:, :n_seg]
        count = lengths.reshape(b, n_seg, 1).to(data.dtype)
        out = _pw().where(count > 0, total / count.clamp(min=1), total)
    else:
        start = empty if initial is None else initial
        out = scatter_reduce(full(shape, start, dtype=data.dtype, device=data.device), 1, index, x,
                             name, include_self=initial is not None)[:, :n_seg]
    return out.reshape(lead + (n_seg,) + rest)


_segment_reduce = segment_reduce
__all__ += ["segment_reduce"]


# ---- ATen's deprecated norm spellings -----------------------------------------------------------
def frobenius_norm(input: Tensor, dim: int | Sequence[int] = (-2, -1), keepdim: bool = False, *,
                   out: Tensor | None = None) -> Tensor:
    """torch.frobenius_norm (deprecated in PyTorch, which warns): vector_norm(input, 2, dim,
    keepdim)."""
    warnings.warn("torch.frobenius_norm is deprecated and it is just left for JIT compatibility. "
                  "Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead", UserWarning,
                  stacklevel=2)
    return vector_norm(input, 2.0, dim, keepdim, out=out)


__all__ += ["frobenius_norm"]
