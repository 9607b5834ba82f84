"""torchlite.testing: assert_close, as torch.testing.assert_close."""
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
