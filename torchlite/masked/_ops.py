"""torch.masked's reductions and normalizations on strided tensors.

Each takes a boolean `mask` (broadcast to the input's shape; None means every element): the
masked-out elements are replaced by the operation's identity, the value that leaves the result
unchanged (0 for sum, 1 for prod, -inf for amax and logsumexp, ...), and the ordinary op runs.
mean, var and std divide by the number of elements the mask keeps, so a fully masked-out slice
gives NaN; median ignores them (NaN is nanmedian's identity).  Dtypes follow PyTorch's:
integer sums and products accumulate in int64, mean/var/std need a floating dtype."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

from .. import _dtype as D

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._dtype import dtype
    from .._tensor import Tensor

__all__ = ["sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean",
           "median", "logsumexp", "logaddexp", "norm", "var", "std", "softmax", "log_softmax",
           "softmin", "normalize"]

_SMALL_INTS = (D.uint8, D.bool, D.int8, D.int16, D.int32)


def _tl():
    import torchlite
    return torchlite


# ---- the mask and the identities ----------------------------------------------------------------
def _canonical_dim(dim, ndim):
    """dim as a sorted tuple of non-negative dims; None or () for every dim."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(builtins.range(ndim))
    n = builtins.max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d >= n or d < -n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
        if d % n in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        dims.append(d % n)
    return tuple(sorted(dims))


def _input_mask(input, mask):
    """mask broadcast to input's shape, as bool."""
    if tuple(mask.shape) != tuple(input.shape):
        if mask.ndim > input.ndim:
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality "
                             "higher than of the input)")
        mask = mask.broadcast_to(tuple(input.shape))
    return mask if mask.dtype is D.bool else mask.to(D.bool)


def _identity(op, input, ord=2):
    """The value that leaves op's result unchanged, as a 0-d tensor of input's dtype."""
    tl, dt = _tl(), input.dtype
    if op in ("sum", "cumsum"):
        v = 0
    elif op in ("prod", "cumprod"):
        v = 1
    elif op in ("amax", "argmax", "logaddexp", "logsumexp"):
        v = -math.inf if dt.is_floating_point or dt.is_complex else tl.iinfo(dt).min
    elif op in ("amin", "argmin"):
        v = math.inf if dt.is_floating_point else tl.iinfo(dt).max
    elif op == "norm":
        v = math.inf if ord == -math.inf else 0
    elif op == "median":
        return tl.tensor(math.nan, dtype=dt if dt.is_floating_point else D.float32,
                         device=input.device)
    else:
        raise NotImplementedError(f"identity of {op} on {dt} input")
    return tl.tensor(v, dtype=dt, device=input.device)


def _filled(op, input, mask, ord=2):
    """input with the masked-out elements replaced by op's identity (input itself without a
    mask)."""
    if mask is None:
        return input
    return _tl().where(_input_mask(input, mask), input, _identity(op, input, ord))


def _sum_dtype(input, dtype):
    if dtype is not None:
        return dtype
    return D.int64 if input.dtype in _SMALL_INTS else input.dtype


# ---- reductions -------------------------------------------------------------------------------
def sum(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
        mask: Tensor | None = None) -> Tensor:
    """The sum of the elements the mask keeps (0 where it keeps none)."""
    dtype = _sum_dtype(input, dtype)
    return _tl().sum(_filled("sum", input, mask), _canonical_dim(dim, input.ndim), bool(keepdim),
                     dtype=dtype)


def prod(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The product of the elements the mask keeps (1 where it keeps none)."""
    r = _filled("prod", input, mask).to(_sum_dtype(input, dtype))
    for d in reversed(_canonical_dim(dim, input.ndim)):
        r = r.prod(dim=d, keepdim=bool(keepdim))
    return r


def cumsum(input: Tensor, dim: int, *, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """Running sums along dim, the masked-out elements counting as 0."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _tl().cumsum(_filled("sum", input, mask), d, dtype=dtype).to(dtype)


def cumprod(input: Tensor, dim: int, *, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """Running products along dim, the masked-out elements counting as 1."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    return _tl().cumprod(_filled("prod", input, mask), d, dtype=dtype).to(dtype)


def amax(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The largest element the mask keeps (-inf, or the dtype's least value, where none)."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().amax(_filled("amax", input, mask), _canonical_dim(dim, input.ndim),
                      bool(keepdim)).to(dtype)


def amin(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The smallest element the mask keeps (inf, or the dtype's largest value, where none)."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().amin(_filled("amin", input, mask), _canonical_dim(dim, input.ndim),
                      bool(keepdim)).to(dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the largest element the mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().argmax(_filled("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the smallest element the mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().argmin(_filled("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _count(input, dim, keepdim, mask):
    """How many elements each reduction over dim combines (the mask's count)."""
    tl = _tl()
    keep = (tl.ones(tuple(input.shape), dtype=D.int64, device=input.device) if mask is None
            else _input_mask(input, mask))
    return keep.sum(dim=_canonical_dim(dim, input.ndim), keepdim=bool(keepdim))


def mean(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False, dtype: dtype | None = None,
         mask: Tensor | None = None) -> Tensor:
    """The mean of the elements the mask keeps (NaN where it keeps none)."""
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a "
                         f"floating point or complex dtype. Got: {dtype}")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype: dtype | None = None,
           mask: Tensor | None = None) -> Tensor:
    """The median of the elements the mask keeps along one dim (NaN where it keeps none; an
    integer input then raises, as it has no NaN)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    x = input if is_float else input.to(D.float32)
    out = _tl().nanmedian(_filled("median", x, mask), d, keepdim).values
    if is_float:
        return out
    if out.isnan().any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating "
                         "point")
    return out.to(dtype)


def logsumexp(input: Tensor, dim: int | Sequence[int] | None = None, *, keepdim: bool = False,
              dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """log(sum(exp)) of the elements the mask keeps (-inf where it keeps none)."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().logsumexp(_filled("logsumexp", input, mask), _canonical_dim(dim, input.ndim),
                           keepdim=bool(keepdim)).to(dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype: dtype | None = None, input_mask: Tensor | None = None,
              other_mask: Tensor | None = None) -> Tensor:
    """log(exp(input) + exp(other)), each operand's masked-out elements counting as -inf."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().logaddexp(_filled("logaddexp", input, input_mask),
                           _filled("logaddexp", other, other_mask)).to(dtype)


def norm(input: Tensor, ord: float = 2.0, dim: int | Sequence[int] | None = None, *,
         keepdim: bool = False, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """The vector ord-norm of the elements the mask keeps."""
    dtype = input.dtype if dtype is None else dtype
    return _tl().linalg.vector_norm(_filled("norm", input, mask, ord), ord,
                                    _canonical_dim(dim, input.ndim), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    c = 1.0 if unbiased is None else (1.0 if unbiased else 0.0)
    if correction is not None:
        c = float(correction)
    if dtype is None:
        dtype = input.dtype if (input.dtype.is_floating_point or input.dtype.is_complex) \
            else D.float32
    compute = dtype if (dtype.is_floating_point or dtype.is_complex) else D.float32
    count = _count(input, dim, True, mask)
    centred = input - sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if c != 0:
        real = {D.complex64: D.float32, D.complex128: D.float64}.get(compute, compute)
        count = (count.to(real) - c).clamp(min=0)
    out = (total / count).to(dtype)
    return out.sqrt() if take_sqrt else out


def var(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, *,
        correction: int | float | None = None, keepdim: bool = False, dtype: dtype | None = None,
        mask: Tensor | None = None) -> Tensor:
    """The variance of the elements the mask keeps (correction 1 unless given)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, *,
        correction: int | float | None = None, keepdim: bool = False, dtype: dtype | None = None,
        mask: Tensor | None = None) -> Tensor:
    """The standard deviation of the elements the mask keeps."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


# ---- normalizations ---------------------------------------------------------------------------
def softmax(input: Tensor, dim: int, *, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """softmax along dim over the kept elements (the masked-out ones get 0)."""
    dtype = input.dtype if dtype is None else dtype
    from ..nn import functional as F
    return F.softmax(_filled("amax", input, mask), _canonical_dim(dim, input.ndim)[0], dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """log_softmax along dim over the kept elements (the masked-out ones get -inf)."""
    dtype = input.dtype if dtype is None else dtype
    from ..nn import functional as F
    return F.log_softmax(_filled("amax", input, mask), _canonical_dim(dim, input.ndim)[0],
                         dtype=dtype)


def softmin(input: Tensor, dim: int, *, dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """softmin along dim over the kept elements (the masked-out ones get 0)."""
    dtype = input.dtype if dtype is None else dtype
    from ..nn import functional as F
    return F.softmin(_filled("amin", input, mask), _canonical_dim(dim, input.ndim)[0], dtype=dtype)


def normalize(input: Tensor, ord: float, dim: int | Sequence[int], *, eps: float = 1e-12,
              dtype: dtype | None = None, mask: Tensor | None = None) -> Tensor:
    """input divided by the ord-norm of its kept elements along dim (at least eps); the
    masked-out elements become 0."""
    dtype = input.dtype if dtype is None else dtype
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return _filled("sum", input, mask) / _tl().maximum(nrm, nrm.new_full((), eps))
