"""torchlite.fft: discrete Fourier transforms over any dims, with torch.fft's names, `n`/`s`,
`dim`, `norm` and dtype rules, and their gradients.

Every transform is built from three one-dimensional primitives, each one array-layer kernel
call (torchlite/_core/fft.pyx: mixed radix for sizes with small factors, Bluestein for the
others) and one autograd node (fft_grad.py):

  c2c  complex -> complex, either sign            (fft, ifft, and every dim of fftn but one)
  r2c  real -> complex, the n//2+1 non-redundant outputs or all n   (rfft, and fft of a real
       input, at about half the cost of c2c)
  c2r  the n//2+1 coefficients of a Hermitian spectrum -> n reals   (irfft)

Multi-dim transforms apply them one dim after another (r2c on the last dim first, c2r on the
last dim last); hfft/ihfft are c2r/r2c of the conjugate.  The kernels are unnormalised; `norm`
becomes one real scale passed to the last primitive of a transform (torch's rule: "backward"
scales the inverse by 1/n, "forward" the forward, "ortho" both by 1/sqrt(n))."""
from __future__ import annotations

import builtins
import math
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._dispatch import array as _A, fft as _F
from .._tensor import _wrap, _wrap_dim
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.graph import needs_grad
from .complex import parts_array, complex_array
from . import _register
from . import fft_grad as _G
from ._kit import with_out, tensor_arg
from .. import _layout
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._device import device
    from .._dtype import dtype
    from .._layout import layout
    from .._tensor import Tensor

_NORMS = (None, "backward", "ortho", "forward")


# ---- the primitives -------------------------------------------------------------------------
def _requires(x):
    return x._requires_grad and (_grad_state.enabled or needs_grad(x))


def c2c(x: Tensor, dim: int, n: int, inverse: bool, scale: float) -> Tensor:
    """The unnormalised DFT (exp(-2 pi i jk/n), or exp(+...) when inverse) of complex x along
    dim (a non-negative dim), x cut or zero-padded to n there, times scale."""
    parts = _F.c2c(parts_array(x._data), dim, n, inverse, scale)
    r = _wrap(complex_array(parts))
    if _requires(x):
        _G.record_c2c(x, r, dim, n, inverse, scale)
    return r


def r2c(x: Tensor, dim: int, n: int, onesided: bool, scale: float) -> Tensor:
    """The forward DFT of real x along dim (cut or padded to n): the n//2+1 outputs that
    determine the rest (onesided) or all n, times scale."""
    parts = _F.r2c(x._data, dim, n, onesided, scale)
    r = _wrap(complex_array(parts))
    if _requires(x):
        _G.record_r2c(x, r, dim, n, onesided, scale)
    return r


def c2r(x: Tensor, dim: int, n: int, scale: float) -> Tensor:
    """The n real values whose spectrum's first n//2+1 entries are x along dim (cut or
    padded), by the inverse-sign unnormalised transform, times scale."""
    r = _wrap(_F.c2r(parts_array(x._data), dim, n, scale))
    if _requires(x):
        _G.record_c2r(x, r, dim, n, scale)
    return r


# ---- argument rules -------------------------------------------------------------------------
def _scale(norm, n, forward):
    """The factor a transform of size n applies for `norm` (forward: the e^-i direction)."""
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if norm == "forward":
        return 1.0 / n if forward else 1.0
    return 1.0 if forward else 1.0 / n


def _check_n(n):
    n = builtins.int(n)
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _float_dtype(x, op):
    """The float dtype x's values transform in: integers and bool go to the default float;
    float16/bfloat16 are refused (as by PyTorch's CPU FFT)."""
    dt = x.dtype.to_real() if x.is_complex() else x.dtype
    if dt in (D.float16, D.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if dt is D.float16 else 'BFloat16'}")
    if not dt.is_floating_point:
        dt = D.get_default_dtype()
    return dt


def _as_complex(x, op):
    dt = _float_dtype(x, op).to_complex()
    return x if x.dtype is dt else x.to(dt)


def _as_real(x, op):
    if x.is_complex():
        raise RuntimeError(f"{op} expects a real input tensor, but got "
                           f"{_A.TORCH_DTYPE_NAMES[x.dtype.code]}")
    dt = _float_dtype(x, op)
    return x if x.dtype is dt else x.to(dt)


def _dims_and_sizes(x, s, dim, op, default_all=True):
    """(dims, sizes) of an n-dim transform: torch's rules for s and dim (s alone means the
    last len(s) dims; neither means every dim, or the last two for the 2-d functions)."""
    nd = x.ndim
    if dim is not None:
        dims = [dim] if isinstance(dim, builtins.int) else list(dim)
        dims = [_wrap_dim(d, nd) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"fft.{op}: dims must be unique")
        if s is not None:
            s = list(s)
            if len(s) != len(dims):
                raise RuntimeError("When given, dim and shape arguments must have the same "
                                   "length")
    elif s is not None:
        s = list(s)
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{nd} dimensions.")
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd)) if default_all else [_wrap_dim(-2, nd), _wrap_dim(-1, nd)]
    if s is None:
        sizes = [x.shape[d] for d in dims]
    else:
        sizes = [x.shape[d] if k == -1 else _check_n(k) for k, d in zip(s, dims)]
    for k in sizes:
        _check_n(k)
    return dims, sizes


# ---- one dim ------------------------------------------------------------------------------------
def _one(x, n, dim, op):
    tensor_arg(x, f"fft.{op}")
    d = _wrap_dim(dim, x.ndim)
    return d, (x.shape[d] if n is None else _check_n(n))


@with_out("fft_fft")
def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The 1-d DFT along dim (input cut or zero-padded to n); a real input gives the full
    complex spectrum through the real transform."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(fft, locals())
    d, k = _one(input, n, dim, "fft")
    scale = _scale(norm, k, True)
    if input.is_complex() or input.dtype in (D.float16, D.bfloat16):
        r = c2c(_as_complex(input, "fft"), d, k, False, scale)
    else:
        r = r2c(_as_real(input, "fft"), d, k, False, scale)
    return r


@with_out("fft_ifft")
def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse 1-d DFT along dim (1/n scaled by default)."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(ifft, locals())
    d, k = _one(input, n, dim, "ifft")
    return c2c(_as_complex(input, "ifft"), d, k, True, _scale(norm, k, False))


@with_out("fft_rfft")
def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The DFT of a real input: the n//2 + 1 outputs that determine the rest."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(rfft, locals())
    d, k = _one(input, n, dim, "rfft")
    return r2c(_as_real(input, "rfft"), d, k, True, _scale(norm, k, True))


@with_out("fft_irfft")
def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The real signal of length n (default 2 * (m - 1)) whose rfft is input."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(irfft, locals())
    tensor_arg(input, "fft.irfft")
    d = _wrap_dim(dim, input.ndim)
    k = 2 * (input.shape[d] - 1) if n is None else n
    k = _check_n(k)
    return c2r(_as_complex(input, "irfft"), d, k, _scale(norm, k, False))


@with_out("fft_hfft")
def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The real spectrum of a Hermitian signal given by its first half (irfft's inverse)."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(hfft, locals())
    tensor_arg(input, "fft.hfft")
    d = _wrap_dim(dim, input.ndim)
    k = _check_n(2 * (input.shape[d] - 1) if n is None else n)
    return c2r(_as_complex(input, "hfft").conj(), d, k, _scale(norm, k, True))


@with_out("fft_ihfft")
def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The first half of the Hermitian spectrum of a real signal (hfft's inverse)."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(ihfft, locals())
    d, k = _one(input, n, dim, "ihfft")
    return r2c(_as_real(input, "ihfft"), d, k, True, _scale(norm, k, False)).conj()


# ---- n dims -------------------------------------------------------------------------------------
def _norm_scale(norm, sizes, forward):
    return _scale(norm, math.prod(sizes), forward)


def _c2c_n(x, dims, sizes, inverse, scale):
    for i, (d, k) in enumerate(zip(dims, sizes)):
        x = c2c(x, d, k, inverse, scale if i == len(dims) - 1 else 1.0)
    return x


@with_out("fft_fftn")
def fftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
         norm: str | None = None) -> Tensor:
    """The DFT over dims (every dim by default), each cut or padded to s."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(fftn, locals())
    tensor_arg(input, "fft.fftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "fftn")
    scale = _norm_scale(norm, sizes, True)
    if not dims:
        return _as_complex(input, "fftn") * scale
    if input.is_complex():
        return _c2c_n(_as_complex(input, "fftn"), dims, sizes, False, scale)
    x = r2c(_as_real(input, "fftn"), dims[-1], sizes[-1], False, 1.0 if len(dims) > 1 else scale)
    return _c2c_n(x, dims[:-1], sizes[:-1], False, scale) if len(dims) > 1 else x


@with_out("fft_ifftn")
def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The inverse DFT over dims."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(ifftn, locals())
    tensor_arg(input, "fft.ifftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "ifftn")
    scale = _norm_scale(norm, sizes, False)
    x = _as_complex(input, "ifftn")
    return _c2c_n(x, dims, sizes, True, scale) if dims else x * scale


@with_out("fft_rfftn")
def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The DFT of a real input over dims, one-sided in the last of them."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(rfftn, locals())
    tensor_arg(input, "fft.rfftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "rfftn")
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    scale = _norm_scale(norm, sizes, True)
    x = r2c(_as_real(input, "rfftn"), dims[-1], sizes[-1], True, 1.0 if len(dims) > 1 else scale)
    return _c2c_n(x, dims[:-1], sizes[:-1], False, scale) if len(dims) > 1 else x


def _last_size(input, s, dims, sizes):
    """irfftn's output length in its last dim: s's, or 2 * (m - 1) from the input."""
    if s is not None and list(s)[-1] != -1:
        return sizes[-1]
    return _check_n(2 * (input.shape[dims[-1]] - 1))


@with_out("fft_irfftn")
def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The real signal whose rfftn is input (the last dim's length: s or 2 * (m - 1))."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(irfftn, locals())
    tensor_arg(input, "fft.irfftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "irfftn")
    if not dims:
        raise RuntimeError("irfftn must transform at least one axis")
    sizes[-1] = _last_size(input, s, dims, sizes)
    scale = _norm_scale(norm, sizes, False)
    x = _c2c_n(_as_complex(input, "irfftn"), dims[:-1], sizes[:-1], True, 1.0)
    return c2r(x, dims[-1], sizes[-1], scale)


@with_out("fft_hfftn")
def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
          norm: str | None = None) -> Tensor:
    """The real n-dim spectrum of a Hermitian signal given by its last dim's first half."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(hfftn, locals())
    tensor_arg(input, "fft.hfftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "hfftn")
    if not dims:
        raise RuntimeError("hfftn must transform at least one axis")
    sizes[-1] = _last_size(input, s, dims, sizes)
    scale = _norm_scale(norm, sizes, True)
    x = _c2c_n(_as_complex(input, "hfftn").conj(), dims[:-1], sizes[:-1], True, 1.0)
    return c2r(x, dims[-1], sizes[-1], scale)


@with_out("fft_ihfftn")
def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: int | Sequence[int] | None = None,
           norm: str | None = None) -> Tensor:
    """The half Hermitian spectrum of a real signal over dims (hfftn's inverse)."""
    if _autocast.regions and _autocast.here.active:      # CPU autocast: in float32
        return _autocast_run(ihfftn, locals())
    tensor_arg(input, "fft.ihfftn")
    dims, sizes = _dims_and_sizes(input, s, dim, "ihfftn")
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    scale = _norm_scale(norm, sizes, False)
    x = r2c(_as_real(input, "ihfftn"), dims[-1], sizes[-1], True, 1.0).conj()
    return _c2c_n(x, dims[:-1], sizes[:-1], True, 1.0) * scale if len(dims) > 1 else x * scale


def _two(fn):
    def two_d(input, s=None, dim=(-2, -1), norm=None, *, out=None):
        return fn(input, s, dim, norm, out=out)
    two_d.__name__ = two_d.__qualname__ = fn.__name__[:-1] + "2"
    two_d.__doc__ = fn.__doc__.replace("over dims", "over two dims (the last two by default)")
    two_d.__annotations__ = {**fn.__annotations__, "out": "Tensor | None"}
    return two_d


fft2, ifft2, rfft2, irfft2, hfft2, ihfft2 = (_two(f) for f in (fftn, ifftn, rfftn, irfftn,
                                                             hfftn, ihfftn))


# ---- helpers ------------------------------------------------------------------------------------
def _freq_dtype(dtype):
    dt = D.to_dtype(dtype, D.get_default_dtype())
    if not dt.is_floating_point:
        raise RuntimeError(f"fftfreq/rfftfreq: dtype must be a floating point dtype, got {dt}")
    return dt


def fftfreq(n: int, d: float = 1.0, *, dtype: dtype | None = None, layout: layout | None = None,
            device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point DFT with sample spacing d:
    [0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)."""
    _layout.check(layout, "fftfreq")
    from .creation import arange
    from .joining import cat
    dt = _freq_dtype(dtype)
    k = cat([arange((n - 1) // 2 + 1, dtype=dt, device=device),
             arange(-(n // 2), 0, dtype=dt, device=device)])
    return (k / (d * n)).requires_grad_(requires_grad)


def rfftfreq(n: int, d: float = 1.0, *, dtype: dtype | None = None, layout: layout | None = None,
             device: device | str | int | None = None, requires_grad: bool = False) -> Tensor:
    """The sample frequencies of rfft's outputs: [0, 1, ..., n // 2] / (d * n)."""
    _layout.check(layout, "rfftfreq")
    from .creation import arange
    k = arange(n // 2 + 1, dtype=_freq_dtype(dtype), device=device)
    return (k / (d * n)).requires_grad_(requires_grad)


def _shift_dims(x, dim):
    if dim is None:
        return list(range(x.ndim))
    return [_wrap_dim(d, x.ndim) for d in ([dim] if isinstance(dim, builtins.int) else dim)]


def fftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Rolls the zero frequency to the middle of each dim (every dim by default)."""
    dims = _shift_dims(input, dim)
    return input.roll([input.shape[d] // 2 for d in dims], dims) if dims else input


def ifftshift(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """fftshift's inverse."""
    dims = _shift_dims(input, dim)
    return input.roll([-(input.shape[d] // 2) for d in dims], dims) if dims else input


__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "hfft2", "ihfft2", "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]


# ---- short-time Fourier transform ---------------------------------------------------------------
def _pad_last(x, left, right, mode):
    """x padded along its last dim by `left`/`right` values: reflect (mirrored, the edge not
    repeated), replicate, circular or constant (zeros) -- stft's pad_mode."""
    from .joining import cat
    n = x.shape[-1]
    if mode == "constant":
        from .creation import zeros
        shape = tuple(x.shape[:-1])
        return cat([zeros(shape + (left,), dtype=x.dtype, device=x.device), x,
                    zeros(shape + (right,), dtype=x.dtype, device=x.device)], -1)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"stft: reflect padding of {max(left, right)} needs an input "
                               f"longer than that along its last dim, got {n}")
        return cat([x[..., 1:left + 1].flip(-1), x, x[..., n - right - 1:n - 1].flip(-1)], -1)
    if mode == "replicate":
        return cat([x[..., :1].expand(*x.shape[:-1], left), x,
                    x[..., n - 1:].expand(*x.shape[:-1], right)], -1)
    if mode == "circular":
        if left > n or right > n:
            raise RuntimeError("stft: circular padding is larger than the input")
        return cat([x[..., n - left:], x, x[..., :right]], -1)
    raise RuntimeError(f"stft: pad_mode must be 'constant', 'reflect', 'replicate' or "
                       f"'circular', got {mode!r}")


def _window(window, win_length, n_fft, like, op):
    """The window centred in n_fft samples (ones when None), in like's real dtype."""
    from .creation import ones, zeros
    from .joining import cat
    dt = (like.dtype.to_real() if like.is_complex() else like.dtype)
    if window is None:
        w = ones(win_length, dtype=dt, device=like.device)
    else:
        if window.ndim != 1 or window.shape[0] != win_length:
            raise RuntimeError(f"{op}: expected a 1D window tensor of size equal to win_length="
                               f"{win_length}, but got window with size {tuple(window.shape)}")
        w = window
    if win_length == n_fft:
        return w
    left = (n_fft - win_length) // 2
    return cat([zeros(left, dtype=w.dtype, device=w.device), w,
                zeros(n_fft - win_length - left, dtype=w.dtype, device=w.device)])


def _stft_lengths(n_fft, hop_length, win_length, op):
    if n_fft < 1:
        raise RuntimeError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if hop < 1:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect",
         normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None) -> Tensor:
    """torch.stft: the DFT of windowed frames of a 1-d (L) or 2-d (B, L) signal, as
    (B?, n_fft // 2 + 1 or n_fft, frames).  center pads n_fft // 2 on both sides with pad_mode;
    normalized scales by n_fft ** -0.5; onesided (the default for real input and window) keeps
    the non-redundant half.  return_complex=False gives view_as_real of the result."""
    tensor_arg(input, "fft.stft")
    if return_complex is None:
        if not input.is_complex() and (window is None or not window.is_complex()):
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop, win = _stft_lengths(n_fft, hop_length, win_length, "stft")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        x = _pad_last(x, n_fft // 2, n_fft // 2, pad_mode)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, x, "stft")  # (B, T, n_fft)
    complex_in = frames.is_complex()
    one = (not complex_in) if onesided is None else onesided
    if one and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = (rfft if one else fft)(frames, n_fft, -1, norm).transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    if return_complex:
        return spec
    from .complex import view_as_real
    return view_as_real(spec)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False) -> Tensor:
    """torch.istft: the signal whose stft is input, by windowed overlap-add divided by the
    summed squared window (RuntimeError where that sum vanishes: the window and hop break the
    NOLA condition)."""
    tensor_arg(input, "fft.istft")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex "
                           f"values, but got {input.ndim}D")
    hop, win = _stft_lengths(n_fft, hop_length, win_length, "istft")
    spec = input.unsqueeze(0) if input.ndim == 2 else input           # (B, F, T)
    n_frames = spec.shape[-1]
    one = (spec.shape[-2] != n_fft) if onesided is None else onesided
    if one and spec.shape[-2] != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (2nd to last) to have "
                           f"size n_fft // 2 + 1 = {n_fft // 2 + 1} for a onesided input, but "
                           f"got {spec.shape[-2]}")
    if not one and spec.shape[-2] != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension to have size n_fft = "
                           f"{n_fft}, but got {spec.shape[-2]}")
    if return_complex and one:
        raise RuntimeError("istft: cannot have onesided output if return_complex is True")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)                                    # (B, T, F)
    frames = irfft(frames, n_fft, -1, norm) if one else ifft(frames, n_fft, -1, norm)
    if not return_complex and frames.is_complex():
        frames = frames.real
    w = _window(window, win, n_fft, frames, "istft")
    total = n_fft + hop * (n_frames - 1)
    y = _overlap_add(frames * w, hop, total)                           # (B, total)
    env = _overlap_add((w * w).expand(1, n_frames, n_fft), hop, total)[0]
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, total)
    if (env[start:end].abs() < 1e-11).any().item():
        raise RuntimeError("istft: window overlap add min is 0: the window and hop_length do "
                           "not satisfy the NOLA condition")
    y = y[..., start:end] / env[start:end]
    if length is not None and y.shape[-1] < length:
        from .joining import cat
        from .creation import zeros
        y = cat([y, zeros(y.shape[0], length - y.shape[-1], dtype=y.dtype, device=y.device)], -1)
    return y.squeeze(0) if input.ndim == 2 else y


def _overlap_add(frames, hop, total):
    """sum over frames t of frames[:, t] placed at t * hop in a (B, total) signal."""
    from .creation import zeros, arange
    b, t, n = frames.shape
    pos = (arange(t, device=frames.device) * hop).unsqueeze(1) + arange(n, device=frames.device)
    out = zeros(b, total, dtype=frames.dtype, device=frames.device)
    return out.index_add(1, pos.reshape(-1), frames.reshape(b, t * n))


_register("stft")(stft)
_register("istft")(istft)
