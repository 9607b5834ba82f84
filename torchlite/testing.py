"""torchlite.testing: assert_close, make_tensor and the deprecated assert_allclose, as
torch.testing's."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from ._tensor import Tensor

if TYPE_CHECKING:
    from typing import Any

# default tolerances by dtype (PyTorch's table)
_TOLS = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
         "float64": (1e-7, 1e-7)}


def _to_tensor(x):
    from ._ops.creation import as_tensor
    return x if isinstance(x, Tensor) else as_tensor(x)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | None = None) -> None:
    """Raise AssertionError unless |actual - expected| <= atol + rtol * |expected| everywhere.

    Shapes must match, and dtypes and devices too unless check_dtype/check_device is False.
    Default tolerances depend on the dtype (float32: rtol 1.3e-6, atol 1e-5; integers: exact).
    Sequences and mappings are compared element by element, with the same options.  With
    allow_subclasses=False a Tensor subclass (nn.Parameter) against a plain Tensor is a
    TypeError, as PyTorch's.  torchlite has one layout (strided), so check_layout has nothing
    to compare."""
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride, msg=msg)
    if isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, **options)
        return
    if isinstance(actual, dict) and isinstance(expected, dict):
        if set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match: {sorted(actual)} != {sorted(expected)}")
        for k in actual:
            assert_close(actual[k], expected[k], **options)
        return
    if (not allow_subclasses and type(actual) is not type(expected)
            and (isinstance(actual, Tensor) or isinstance(expected, Tensor))):
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                        f"{type(expected)}.")
    if not isinstance(actual, Tensor) and not isinstance(expected, Tensor):
        a, e = _to_tensor(actual), _to_tensor(expected)
        check_dtype = False
    else:
        a, e = _to_tensor(actual), _to_tensor(expected)
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'rtol' if rtol is None else 'atol'}.")
    if tuple(a.shape) != tuple(e.shape):
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: "
                                    f"{a.shape} != {e.shape}.")
    if check_device and a.device != e.device:
        raise AssertionError(msg or f"The values for attribute 'device' do not match: {a.device} != {e.device}.")
    if check_dtype and a.dtype is not e.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: {a.dtype} != {e.dtype}.")
    if check_stride and a.stride() != e.stride():
        raise AssertionError(msg or f"The values for attribute 'stride()' do not match: "
                                    f"{a.stride()} != {e.stride()}.")
    if rtol is None:
        rt_a, at_a = _TOLS.get(a.dtype.name, (0.0, 0.0))
        rt_e, at_e = _TOLS.get(e.dtype.name, (0.0, 0.0))
        rtol, atol = builtins.max(rt_a, rt_e), builtins.max(at_a, at_e)
    a64, e64 = a.cpu().double(), e.cpu().double()
    ok = a64.isclose(e64, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if builtins.bool(ok.all()):
        return
    bad = (~ok).sum().item() if hasattr(ok, "sum") else "some"
    diff = (a64 - e64).abs()
    finite = diff.isfinite()
    finite_diffs = [v for v, f in zip(diff.reshape(-1).tolist(), finite.reshape(-1).tolist()) if f]
    max_abs = builtins.max(finite_diffs or [float("nan")])
    total = a.numel()
    raise AssertionError(msg or (
        f"Tensor-likes are not close!\n\nMismatched elements: {bad} / {total}\n"
        f"Greatest absolute difference: {max_abs} (up to {atol} allowed)\n"
        f"Tolerances: rtol={rtol}, atol={atol}"))


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated torch.testing.assert_allclose: assert_close with NaNs equal by default
    and without comparing dtypes or strides (a non-tensor `expected` takes actual's dtype)."""
    import warnings
    from ._ops.creation import tensor
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in "
                  "a future release. Please use `torch.testing.assert_close()` instead.",
                  FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


# make_tensor's range when low/high are not given, by kind of dtype: [low, high)
_DEFAULT_RANGE = {"bool": (0, 2), "unsigned": (0, 10), "signed": (-9, 10), "float": (-9, 9)}


def make_tensor(*shape: Any, dtype: Any, device: Any, low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of `shape` (ints, or one sequence of them) and `dtype` on `device` filled with
    values drawn uniformly from [low, high) (torch.testing.make_tensor): by default [0, 2) for
    bool, [0, 10) for uint8, [-9, 10) for signed integers and [-9, 9) for floating and complex
    (each part); given bounds are clamped to the dtype's finite range.  noncontiguous: a view
    with a stride of 2 in the last dim (more than one element); exclude_zero: zeros become 1
    (bool, integers) or the dtype's smallest normal number."""
    import math
    from . import _dtype as D
    from ._ops.complex import complex as complex_
    from ._ops.creation import empty
    from ._ops.random import randint
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    dtype = D.to_dtype(dtype)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, "
                         f"but got noncontiguous={noncontiguous} and memory_format={memory_format}")
    if requires_grad and not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError("make_tensor: requires_grad=True is not supported for non-floating point "
                         "input dtypes")
    kind = ("bool" if dtype is D.bool else "unsigned" if dtype is D.uint8 else
            "float" if dtype.is_floating_point or dtype.is_complex else "signed")
    lo_d, hi_d = _DEFAULT_RANGE[kind]
    low = lo_d if low is None else low
    high = hi_d if high is None else high
    for name, v in (("low", low), ("high", high)):
        if isinstance(v, float) and math.isnan(v):
            raise ValueError(f"`{name}` cannot be NaN, but got {name}={v}")
    if kind != "bool":
        info = (D.iinfo if kind in ("unsigned", "signed") else D.finfo)(
            D.float32 if dtype is D.complex64 else D.float64 if dtype is D.complex128 else dtype)
        low, high = max(low, info.min), min(high, info.max)
    if low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    full = shape[:-1] + (shape[-1] * 2,) if noncontiguous and math.prod(shape) > 1 else shape
    if kind == "bool":
        t = randint(0, 2, full, device=device).to(D.bool)
    elif kind in ("unsigned", "signed"):
        lo_i, hi_i = math.ceil(low), math.ceil(high)
        t = randint(lo_i, max(hi_i, lo_i + 1), full, dtype=dtype, device=device)
    else:
        real = D.float32 if dtype is D.complex64 else D.float64 if dtype is D.complex128 else dtype
        parts = [empty(full, dtype=real, device=device).uniform_(low, high)
                 for _ in range(2 if dtype.is_complex else 1)]
        t = parts[0] if len(parts) == 1 else complex_(parts[0], parts[1])
    if full != shape:
        t = t[..., ::2]
    elif memory_format is not None:
        t = t.clone(memory_format=memory_format)
    if exclude_zero:
        if kind in ("bool", "unsigned", "signed"):
            t = t.masked_fill(t == 0, 1) if kind != "bool" else t | True
        else:
            tiny = D.finfo(D.float32 if dtype is D.complex64 else D.float64 if dtype is D.complex128 else dtype).tiny
            t = t.masked_fill(t == 0, tiny)
    return t.requires_grad_(requires_grad) if requires_grad else t
