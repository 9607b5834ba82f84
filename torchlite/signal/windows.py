"""torchlite.signal.windows: PyTorch's torch.signal.windows (SciPy's window functions, with
PyTorch's signatures and checks).

Each window has M points; `sym=True` (the default) gives the symmetric window of filter
design, `sym=False` the periodic one of spectral analysis (the symmetric window of M + 1
points without its last).  The points are computed in float64 and rounded once to `dtype`
(float32 or float64, PyTorch's choice of allowed dtypes)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from .. import _dtype as D
from .. import _layout
from .._ops.creation import arange, empty, ones

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._device import device
    from .._dtype import dtype
    from .._layout import layout
    from .._tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    """PyTorch's checks: M an int >= 0, a strided layout, float32 or float64; the dtype to
    use."""
    if isinstance(M, bool) or not hasattr(M, "__index__"):
        raise TypeError(f"{name}(): argument 'M' must be int, not {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not _layout.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dtype = dtype or D.get_default_dtype()
    if dtype not in (D.float32, D.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _finish(w, dtype, device, requires_grad):
    w = w.to(dtype)
    if device is not None:
        w = w.to(device)
    return w.requires_grad_() if requires_grad else w


def _trivial(M, dtype, device, requires_grad):
    """The windows of 0 and 1 points (empty, and [1.])."""
    if M == 0:
        return empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    return ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)


def _span(M, sym):
    """The number of steps the window's formula spans: M - 1 symmetric, M periodic."""
    return M - 1 if sym else M


def general_cosine(M: int, *, a: Sequence[float], sym: bool = True, dtype: dtype | None = None,
                   layout: layout | None = None, device: device | str | int | None = None,
                   requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1)) (M instead of M - 1 when periodic)."""
    dtype = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if isinstance(a, (str, bytes)) or not hasattr(a, "__iter__"):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    k = arange(M, dtype=D.float64) * (2.0 * math.pi / _span(M, sym))
    w = k * 0.0
    for i, c in enumerate(a):
        w = w + ((-1) ** i) * float(c) * (k * i).cos()
    return _finish(w, dtype, device, requires_grad)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: dtype | None = None,
                    layout: layout | None = None, device: device | str | int | None = None,
                    requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
            device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window: general_hamming with alpha = 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
         device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The Hann window: general_hamming with alpha = 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
             device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The Blackman window: general_cosine with a = (0.42, 0.5, 0.08)."""
    dtype = _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
            device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
             device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The triangle 1 - |2n / (M - 1) - 1|."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    k = arange(M, dtype=D.float64) * (2.0 / _span(M, sym)) - 1.0
    return _finish(1.0 - k.abs(), dtype, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
           device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The sine window sin(pi (n + 1/2) / M) (M + 1 in place of M when periodic, as
    PyTorch and SciPy have it)."""
    dtype = _checks("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    span = M + 1 if not sym and M > 1 else M
    k = (arange(M, dtype=D.float64) + 0.5) * (math.pi / span)
    return _finish(k.sin(), dtype, device, requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: dtype | None = None, layout: layout | None = None,
                device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window exp(-|n - center| / tau); center (M - 1)/2, or M/2
    for a periodic window, and only choosable for a periodic one."""
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = (arange(M, dtype=D.float64) - float(center)) / float(tau)
    return _finish((-k.abs()).exp(), dtype, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
             device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The Gaussian window exp(-(n - c)^2 / (2 std^2)), c the window's center."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    c = (M if not sym and M > 1 else M - 1) / 2.0
    k = (arange(M, dtype=D.float64) - c) / (float(std) * math.sqrt(2.0))
    return _finish((-(k * k)).exp(), dtype, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: dtype | None = None, layout: layout | None = None,
           device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The Kaiser window i0(beta sqrt(1 - t^2)) / i0(beta), t = -1 + 2n / (M - 1) (M when
    periodic)."""
    from .._ops.special import kaiser_window
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    return kaiser_window(M, periodic=not sym, beta=float(beta), dtype=dtype, device=device,
                         requires_grad=requires_grad)
