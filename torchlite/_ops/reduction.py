"""Reductions, scans, softmax and norms.

sum/nansum/mean/nanmean/prod, max/min/amax/amin/aminmax, argmax/argmin, var/std (and
var_mean/std_mean), logsumexp, norm, any/all, count_nonzero, median/nanmedian,
cumsum/cumprod/cummax/cummin/logcumsumexp, softmax/log_softmax, and the linalg norms
vector_norm, matrix_norm and linalg_norm (which torchlite.linalg exposes).

Each op checks its arguments, then calls the array layer (torchlite/_core/reduce.pyx, whose
kernels are in kernels/reduce*.h).  PyTorch's rules hold: bool and integer sums, products and
cumulative sums give int64, float16/bfloat16 accumulate in float32, NaN propagates through
max/min/sum, argmax returns the first index on ties and counts NaN as the largest value."""
import builtins
import math
import warnings

from .. import _dtype as D
from .._core import array as _A
from .._core import elementwise as _ew
from .._core import reduce as _R
from .._tensor import Tensor, _wrap, _wrap_dim
from . import _register
from .pointwise import maximum as _maximum, minimum as _minimum, _prepare_out
from .pointwise import _no_out_with_grad
from . import reduction_grad as _G
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import inplace_records

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax",
           "argmax", "argmin", "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "any",
           "all", "count_nonzero", "median", "nanmedian", "cumsum", "cumprod", "cummax", "cummin",
           "logcumsumexp", "softmax", "log_softmax"]

_TORCH_NAMES = _R._TORCH_NAMES


# the named result tuples (torch.return_types)
from .. import return_types  # noqa: E402


# ---- helpers -------------------------------------------------------------------------------
def _arr(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._data


def _cast_to(a, dtype):
    """a cast to `dtype` (a torchlite dtype or None): PyTorch casts the input before the op."""
    if dtype is None:
        return a
    code = D.to_dtype(dtype).code
    return a if a.dtype == code else _ew.cast(a, code)


def _out(arr, out, name, exact_dtype=None):
    """Wrap a result, or write it into out= (resized when its shape differs).  exact_dtype:
    the dtype out must have, for ops that do not cast into out."""
    if out is None:
        return _wrap(arr)
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if exact_dtype is not None and out._data.dtype != exact_dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {D.DTYPES[exact_dtype]}, but got "
                           f"{out.dtype} instead")
    _ew.copy_(_prepare_out(out, arr.shape, name), arr)
    out._bump_version()
    return out


def _tracked(input, out, name):
    """Whether this call records a node (called once input requires grad): only with grad
    mode on, and never with out= (PyTorch refuses out= when it would record)."""
    if not _grad_state.enabled:
        return False
    if out is not None:
        _no_out_with_grad(name, input)
    return True


def _out_pair(pair, out, name, tuple_type):
    """A (values, indices) result, or written into the out=(values, indices) tensors."""
    v, i = pair
    if out is None:
        return tuple_type(_wrap(v), _wrap(i))
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{name}(): argument 'out' must be a tuple of two Tensors")
    return tuple_type(_out(v, out[0], name, v.dtype), _out(i, out[1], name, i.dtype))


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
def _sum_like(op, input, dim, keepdim, dtype, out):
    a = _cast_to(_arr(input, op), dtype)
    r = _R.reduce(op, a, dim, keepdim)
    if dtype is not None:
        r = _cast_to(r, dtype)
    if input._requires_grad and _tracked(input, out, op):
        if op == "prod":
            return _G.record_prod(input, _wrap(r), dim, keepdim)
        return _G.record_sum(op, input, _wrap(r), dim, keepdim)
    return _out(r, out, op)


@_register("sum")
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum over dim (an int, a tuple, or None for every dim).  Bool and integer inputs sum as
    int64; dtype= casts the input first."""
    return _sum_like("sum", input, dim, keepdim, dtype, out)


@_register("nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum over dim treating NaN as zero."""
    return _sum_like("nansum", input, dim, keepdim, dtype, out)


@_register("prod")
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product over one dim (or every element when dim is None); integers give int64."""
    return _sum_like("prod", input, _single_dim(dim, "prod"), keepdim, dtype, out)


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
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over dim; floating inputs only (or dtype= a floating dtype)."""
    a = _float_input(input, dtype, "mean")
    r = _R.mean(a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, "mean"):
        return _G.record_sum("mean", input, _wrap(r), dim, keepdim)
    return _out(r, out, "mean")


@_register("nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean over dim of the elements that are not NaN (NaN when all are)."""
    a = _float_input(input, dtype, "nanmean")
    r = _R.mean(a, dim, keepdim, True)
    if input._requires_grad and _tracked(input, out, "nanmean"):
        return _G.record_sum("nanmean", input, _wrap(r), dim, keepdim)
    return _out(r, out, "nanmean")


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
        return _out(r, out, name, a.dtype)
    pair = _R.argreduce(is_min, a, _single_dim(dim, name), keepdim, True, name)
    tracked = input._requires_grad and _tracked(input, out, name)
    res = _out_pair(pair, out, name, return_types.min if is_min else return_types.max)
    if tracked:
        _G.record_by_index(name, input, res[0], res[1], dim, keepdim, res)
    return res


@_register("max")
def max(input, dim=None, keepdim=False, *, out=None):
    """max(input): the largest element (0-d).  max(input, dim, keepdim=False): the named tuple
    (values, indices) along dim, the first index on ties.  max(input, other): maximum()."""
    return _max_min(False, input, dim, keepdim, out)


@_register("min")
def min(input, dim=None, keepdim=False, *, out=None):
    """min(input), min(input, dim, keepdim=False) -> (values, indices), min(input, other)."""
    return _max_min(True, input, dim, keepdim, out)


@_register("amax")
def amax(input, dim=(), keepdim=False, *, out=None):
    """The largest value over dim (every dim when empty); NaN propagates."""
    return _amax_amin(False, input, dim, keepdim, out)


@_register("amin")
def amin(input, dim=(), keepdim=False, *, out=None):
    """The smallest value over dim (every dim when empty); NaN propagates."""
    return _amax_amin(True, input, dim, keepdim, out)


def _amax_amin(is_min, input, dim, keepdim, out):
    name = "amin" if is_min else "amax"
    a = _arr(input, name)
    r = _R.reduce(name, a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, name):
        return _G.record_amax(is_min, input, _wrap(r), dim, keepdim)
    return _out(r, out, name, a.dtype)


@_register("aminmax")
def aminmax(input, *, dim=None, keepdim=False, out=None):
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
    return _out(idx, out, name, D.int64.code)


@_register("argmax")
def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the largest value over dim (of the flattened input when dim is None): the
    first one on ties, and NaN counts as the largest."""
    return _arg(False, input, dim, keepdim, out)


@_register("argmin")
def argmin(input, dim=None, keepdim=False, *, out=None):
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
    v, m = _R.var(a, dim, correction, keepdim, take_sqrt, want_mean)
    if input._requires_grad and _tracked(input, out, name):
        res = (_wrap(v), _wrap(m)) if want_mean else _wrap(v)
        return _G.record_var(input, res, dim, keepdim, correction, take_sqrt, want_mean)
    if want_mean:
        if out is not None:
            return (_out(v, out[0], name), _out(m, out[1], name))
        return _wrap(v), _wrap(m)
    return _out(v, out, name)


@_register("var")
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over dim: sum((x - mean)^2) / max(0, N - correction); correction=1 (Bessel)
    by default, unbiased=False means correction=0."""
    return _var_std("var", False, False, input, dim, unbiased, keepdim, correction, out)


@_register("std")
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation over dim: sqrt(var(...))."""
    return _var_std("std", True, False, input, dim, unbiased, keepdim, correction, out)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(var, mean) over dim, from one mean."""
    return _var_std("var_mean", False, True, input, dim, unbiased, keepdim, correction, out)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """(std, mean) over dim, from one mean."""
    return _var_std("std_mean", True, True, input, dim, unbiased, keepdim, correction, out)


# ---- logsumexp, any/all, count_nonzero -----------------------------------------------------
@_register("logsumexp")
def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(input))) over dim, computed stably (the max is taken out first); integer
    inputs give the default float dtype."""
    a = _arr(input, "logsumexp")
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not "
                        "NoneType")
    if not _is_float(a):
        a = _ew.cast(a, _ew.get_default_float())
    r = _R.logsumexp(a, dim, keepdim)
    if input._requires_grad and _tracked(input, out, "logsumexp"):
        return _G.record_logsumexp(input, _wrap(r), dim, keepdim)
    return _out(r, out, "logsumexp")


def _any_all(op, input, dim, keepdim, out):
    a = _arr(input, op)
    r = _R.reduce(op, a, dim, keepdim)
    if out is not None and out._data.dtype != r.dtype:
        raise RuntimeError(f"{op} only supports bool tensor for result, got: "
                           f"{_TORCH_NAMES[out._data.dtype]}")
    return _out(r, out, op)


@_register("any")
def any(input, dim=None, keepdim=False, *, out=None):
    """True where any element over dim is nonzero (uint8 inputs give uint8)."""
    return _any_all("any", input, dim, keepdim, out)


@_register("all")
def all(input, dim=None, keepdim=False, *, out=None):
    """True where every element over dim is nonzero (uint8 inputs give uint8)."""
    return _any_all("all", input, dim, keepdim, out)


@_register("count_nonzero")
def count_nonzero(input, dim=None):
    """The number of nonzero elements over dim, as int64 (NaN counts as nonzero)."""
    return _wrap(_R.reduce("count_nonzero", _arr(input, "count_nonzero"), dim, False))


# ---- median --------------------------------------------------------------------------------
def _median(name, ignore_nan, input, dim, keepdim, out):
    a = _arr(input, name)
    v, i = _R.median(a, dim, keepdim, ignore_nan, name)
    tracked = input._requires_grad and _tracked(input, out, name)
    if dim is None:
        if v is None:                      # the median of nothing is NaN
            v = _A.full((), math.nan, a.dtype if _is_float(a) else _ew.get_default_float())
        if tracked:
            return _G.record_even(name, input, _wrap(v))
        return _out(v, out, name)
    res = _out_pair((v, i), out, name, getattr(return_types, name))
    if tracked:
        _G.record_by_index(name, input, res[0], res[1], dim, keepdim, res)
    return res


@_register("median")
def median(input, dim=None, keepdim=False, *, out=None):
    """median(input): the lower median of every element.  median(input, dim, keepdim=False):
    the named tuple (values, indices) along dim.  NaN propagates."""
    return _median("median", False, input, dim, keepdim, out)


@_register("nanmedian")
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median() ignoring NaN (NaN only where every element is NaN)."""
    return _median("nanmedian", True, input, dim, keepdim, out)


# ---- scans ---------------------------------------------------------------------------------
def _scan(op, input, dim, dtype, out):
    a = _cast_to(_arr(input, op), dtype)
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' (position 1) must be int, not NoneType")
    r = _R.scan(op, a, dim)
    if dtype is not None:
        r = _cast_to(r, dtype)
    if input._requires_grad and _tracked(input, out, op):
        return _G.record_scan(op, input, _wrap(r), dim)
    return _out(r, out, op)


@_register("cumsum")
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along dim (bool and integers give int64; float32 accumulates in
    float64)."""
    return _scan("cumsum", input, dim, dtype, out)


@_register("cumprod")
def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along dim (bool and integers give int64)."""
    return _scan("cumprod", input, dim, dtype, out)


@_register("logcumsumexp")
def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along dim, computed stably; floating inputs only."""
    return _scan("logcumsumexp", input, dim, None, out)


def _scan_inplace(op, self, dim, dtype):
    if inplace_records(self):
        from .pointwise_grad import check_inplace, rebase_inplace
        check_inplace(self, op + "_")
        return rebase_inplace(self, lambda old: _scan(op, old, dim, dtype, None))
    r = _R.scan(op, _cast_to(self._data, dtype), dim)
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
def cummax(input, dim, *, out=None):
    """(values, indices) of the running maximum along dim (the later index on ties; NaN
    sticks once met), as PyTorch."""
    return _cum_arg(False, input, dim, out)


@_register("cummin")
def cummin(input, dim, *, out=None):
    """(values, indices) of the running minimum along dim."""
    return _cum_arg(True, input, dim, out)


# ---- softmax -------------------------------------------------------------------------------
def _softmax(log, input, dim, dtype):
    name = "log_softmax" if log else "softmax"
    a = _cast_to(_arr(input, name), dtype)
    if dim is None:
        raise TypeError(f"{name}(): argument 'dim' (position 2) must be int, not NoneType")
    r = _wrap(_R.softmax(a, dim, log))
    if input._requires_grad and _grad_state.enabled:
        return _G.record_softmax(log, input, r, dim)
    return r


@_register("softmax")
def softmax(input, dim, dtype=None):
    """exp(x - max) / sum(exp(x - max)) along dim, fused per row; dtype= casts the input
    first.  float16/bfloat16 compute in float32."""
    return _softmax(False, input, dim, dtype)


@_register("log_softmax")
def log_softmax(input, dim, dtype=None):
    """x - max - log(sum(exp(x - max))) along dim."""
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
    ord inf/-inf are max/min |x|, ord 0 counts the nonzeros."""
    p = _ord_value(ord, "linalg_vector_norm")
    a = _norm_input("linalg.vector_norm", x, dtype)
    r = _R.vector_norm(a, p, dim, keepdim)
    if x._requires_grad and _tracked(x, out, "linalg.vector_norm"):
        return _G.record_norm(x, _wrap(r), p, dim, keepdim)
    return _out(r, out, "linalg.vector_norm")


_SVD_ORDS = ("nuc", 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """torch.linalg.matrix_norm over the two dims: 'fro', 1/-1 (max/min column sum of |A|) and
    inf/-inf (max/min row sum).  'nuc', 2 and -2 need singular values, which torchlite does
    not have: they raise RuntimeError."""
    name = "linalg.matrix_norm"
    a = _arr(A, name)
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    a = _norm_input(name, A, dtype)
    if isinstance(dim, builtins.int) or len(dim) != 2:
        got = dim if isinstance(dim, builtins.int) else " ".join(str(d) for d in dim)
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {got}")
    d0, d1 = _wrap_dim(dim[0], a.ndim), _wrap_dim(dim[1], a.ndim)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({d0}, {d1})")
    if isinstance(ord, str):
        if ord == "fro":
            r = _R.vector_norm(a, 2.0, (d0, d1), keepdim, name)
            if A._requires_grad and _tracked(A, out, name):
                return _G.record_norm(A, _wrap(r), 2.0, (d0, d1), keepdim)
            return _out(r, out, name)
        if ord != "nuc":
            raise RuntimeError(f"{name}: Order {ord} not supported.")
    if ord in _SVD_ORDS:
        raise RuntimeError(f"{name}: ord={ord!r} needs the singular values of A (an SVD), which "
                           f"torchlite does not implement")
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    # 1/-1: sum |A| down the columns (over d0), then max/min over d1; inf/-inf: the rows
    first, second = (d0, d1) if abs(ord) == 1 else (d1, d0)
    if not keepdim and second > first:
        second -= 1
    if A._requires_grad and _tracked(A, out, name):      # composed of recorded ops
        return (amax if ord > 0 else amin)(vector_norm(A, 1.0, first, keepdim, dtype=dtype),
                                           second, keepdim)
    s = _R.vector_norm(a, 1.0, first, keepdim, name)
    r = _R.reduce("amax" if ord > 0 else "amin", s, second, keepdim, "amax" if ord > 0 else "amin")
    return _out(r, out, name)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """torch.linalg.norm: a vector norm over one dim (or every element when ord and dim are
    None), a matrix norm over two dims (or a 2-D input when only ord is given)."""
    a = _arr(A, "linalg.norm")
    if dim is not None:
        dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
    elif ord is not None and a.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {a.ndim}D")
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype, out=out)
    if (dim is not None and len(dims) == 2) or (dim is None and a.ndim == 2):
        return matrix_norm(A, ord, dims if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    if isinstance(ord, str):
        return matrix_norm(A, ord, dims if dim is not None else (-2, -1), keepdim, dtype=dtype,
                           out=out)
    return vector_norm(A, ord, dim, keepdim, dtype=dtype, out=out)


@_register("norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: p='fro' (the 2-norm of the elements over dim), 'nuc', or a number p for
    the vector p-norm (inf, -inf, 0 included)."""
    if p is None:
        p = 2
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and not isinstance(dim, builtins.int) and len(dim) > 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                                   f"{' '.join(str(d) for d in dim)}")
            return vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        if p == "nuc":
            return matrix_norm(input, p, (-2, -1) if dim is None else dim, keepdim, dtype=dtype,
                               out=out)
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)
