"""Fractional max pooling (torch.nn.functional): fractional_max_pool2d, fractional_max_pool3d
(Graham, "Fractional Max-Pooling", 2014).

Each (batch, channel) plane gets its own pseudo-random windows: one sample u in [0, 1) per
spatial dim (the `_random_samples`, drawn from torchlite's generator when not given) places
the window starts as PyTorch's generate_intervals does,

    start[i] = int((i + u) * alpha) - int(u * alpha),  alpha = (in - k) / (out - 1),
    start[out - 1] = in - k,

computed in the input's dtype as PyTorch computes it (float32 samples give float32 starts).
As the windows differ per plane, the pooling is a gather of every window's elements
(N, C, L, k_1 * ... * k_n) followed by a running maximum over the window positions in
row-major order with PyTorch's rule (take v when v > max or v is NaN), so ties go to the first
maximum and a NaN wins.  Indices count positions within each plane (volume), and the
gradient is a scatter by them (pooling_grad's ops)."""
from __future__ import annotations

import builtins
import numbers

from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...autograd.graph import Node, record, needs_grad
from ..._ops.creation import arange, full
from ..._ops.random import rand
from ..._ops.joining import cat
from ... import _dtype as D
from . import pooling_grad as _G
from ..._ops._kit import tensor_arg

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]

_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}
_THREE = {2: "", 3: " three"}
# the column of _random_samples that places each spatial dim's windows: 2-d planes take W's
# sample first, volumes T, H, W in order (as PyTorch's kernels read them)
_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def _ints(v, name, op, nd):
    seq = v if isinstance(v, (list, tuple)) else (v,)
    out = []
    for a in seq:
        if isinstance(a, builtins.bool) or not isinstance(a, (numbers.Integral, Tensor)):
            raise TypeError(f"{op}(): argument '{name}' (position 2) must be tuple of ints, not "
                            f"{type(a).__name__}")
        out.append(a.__index__())
    if len(out) == 1:
        out *= nd
    if len(out) != nd:
        raise RuntimeError(f"{op}: {name} must either be a single Int or tuple of{_THREE[nd]} Ints")
    return out


def _output_size(input, output_size, output_ratio, nd, op):
    """PyTorch's Python wrapper: output_size, or int(in * ratio) per dim."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:
        return output_size
    if nd == 2 and isinstance(output_ratio, (list, tuple)) and len(output_ratio) > 2:
        raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
    ratio = list(output_ratio) if isinstance(output_ratio, (list, tuple)) else [output_ratio]
    if len(ratio) == 1:
        ratio *= nd
    return [int(input.shape[-nd + i] * ratio[i]) for i in range(nd)]


def _check(input, k, out, samples, nd, op):
    """PyTorch's checks of the shapes, the sizes and the samples."""
    name = op if nd == 2 else "fractional_max_pool3d_out"
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}(): kernel size should be greater than zero, but got "
                           f"{'x'.join(map(str, k))}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    for i in range(1, input.dim()):
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{list(input.shape)} with dimension {i} being "
                               f"empty.")
    spatial = input.shape[-nd:]
    dims = ("height", "width") if nd == 2 else ("time", "height", "width")
    order = (0, 1) if nd == 2 else (0, 2, 1)        # PyTorch checks 3-d as time, width, height
    for i in order:
        # 2-d allows the last window to end at the border; 3-d's check is strict
        fits = out[i] + k[i] - 1 <= spatial[i] if nd == 2 else out[i] + k[i] - 1 < spatial[i]
        if not fits:
            raise RuntimeError(f"{name}(): pool {dims[i]} {k[i]} too large relative to input "
                               f"{dims[i]} {spatial[i]}")
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    batch = input.shape[0] if input.dim() == nd + 2 else 1
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples.shape[2]}.")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_out_frame\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")


def _starts(u, n_in, n_out, k):
    """The window starts (N, C, n_out) for samples u (N, C) of the input's dtype."""
    n, c = u.shape
    last = full((n, c, 1), n_in - k, dtype=D.int64, device=u.device)
    if n_out <= 1:
        return last[:, :, :n_out]
    dt = u.dtype
    alpha = (full((), float(n_in - k), dtype=dt, device=u.device)
             / full((), float(n_out - 1), dtype=dt, device=u.device))
    i = arange(n_out - 1, dtype=dt, device=u.device)
    u = u.unsqueeze(2)
    head = ((i + u) * alpha).to(D.int64) - (u * alpha).to(D.int64)
    return cat([head, last], 2)


class FractionalMaxPoolBackward0(Node):
    """Scatters the gradient to the saved indices of each plane, seen by the kernels as an
    (A, B) plane: (H, W) for 2-d, (T, H*W) for 3-d; in_shape is the input's."""

    in_shape = ()
    plane = ()

    def backward(self, g):
        shape = tuple(self.in_shape)
        flat = _G.scatter(g, self.saved("indices"), shape[:2] + tuple(self.plane), 2)
        return (flat.view(shape),)


class FractionalMaxPool2DBackward0(FractionalMaxPoolBackward0):
    pass


class FractionalMaxPool3DBackward0(FractionalMaxPoolBackward0):
    pass


def _fractional(input, kernel_size, output_size, output_ratio, samples, nd):
    op = f"fractional_max_pool{nd}d"
    tensor_arg(input, op, "input", pos=1)
    out = _output_size(input, output_size, output_ratio, nd, op)
    if samples is None:
        n_batch = 1 if input.dim() == nd + 1 else input.shape[0]
        samples = rand(n_batch, input.shape[-nd - 1], nd, dtype=input.dtype, device=input.device)
    k = _ints(kernel_size, "kernel_size", op, nd)
    out = _ints(out, "output_size", op, nd)
    _check(input, k, out, samples, nd, op)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c = x.shape[:2]
    spatial = list(x.shape[2:])
    with no_grad():
        u = samples.detach()[:n]
        # the flat in-plane position of every window element: (N, C, *out, *k)
        idx = None
        stride = 1
        for i in reversed(range(nd)):
            pos = _starts(u[:, :, _SAMPLE_OF_DIM[nd][i]], spatial[i], out[i], k[i]).unsqueeze(3) \
                + arange(k[i], device=x.device)                         # (N, C, out_i, k_i)
            shape = [n, c] + [1] * (2 * nd)
            shape[2 + i], shape[2 + nd + i] = out[i], k[i]
            term = pos.view(shape) * stride
            idx = term if idx is None else idx + term
            stride *= spatial[i]
        positions = 1
        for v in out:
            positions *= v
        window = 1
        for v in k:
            window *= v
        idx = idx.expand(n, c, *out, *k).reshape(n, c, positions, window)
        vals = x.reshape(n, c, stride).gather(2, idx.reshape(n, c, positions * window))
        vals = vals.view(n, c, positions, window)
        best, best_at = vals[..., 0], idx[..., 0]
        for j in range(1, window):      # PyTorch's running maximum, window position by position
            v = vals[..., j]
            take = (v > best) | v.isnan()
            best = best.where(~take, v)
            best_at = best_at.where(~take, idx[..., j])
        y = best.view(n, c, *out)
        indices = best_at.view(n, c, *out)
    if needs_grad(x):
        node = (FractionalMaxPool2DBackward0 if nd == 2 else FractionalMaxPool3DBackward0)()
        node.in_shape = tuple(x.shape)
        node.plane = tuple(spatial) if nd == 2 else (spatial[0], spatial[1] * spatial[2])
        node.save_output(indices=indices)
        record(node, (x,), y)
    return (y.squeeze(0), indices.squeeze(0)) if unbatched else (y, indices)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                                       output_size: int | tuple[int, ...] | None = None,
                                       output_ratio: float | tuple[float, ...] | None = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of 2-d fractional max pooling of (N, C, H, W) or (C, H, W) to
    output_size, or to int(size * output_ratio)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input: Tensor, kernel_size: int | tuple[int, ...],
                          output_size: int | tuple[int, ...] | None = None,
                          output_ratio: float | tuple[float, ...] | None = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """2-d fractional max pooling over pseudo-random kh x kw windows; with return_indices,
    also the position of each maximum within its plane (h * W + w)."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: int | tuple[int, ...],
                                       output_size: int | tuple[int, ...] | None = None,
                                       output_ratio: float | tuple[float, ...] | None = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of 3-d fractional max pooling of (N, C, T, H, W) or (C, T, H, W)."""
    return _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input: Tensor, kernel_size: int | tuple[int, ...],
                          output_size: int | tuple[int, ...] | None = None,
                          output_ratio: float | tuple[float, ...] | None = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """3-d fractional max pooling over pseudo-random kt x kh x kw windows; with
    return_indices, also the position of each maximum within its volume."""
    out, idx = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out



# ---- forward mode: J t (autograd/forward_ad.py reads JVP) --------------------------------------
# Each output is one input element (the saved flat index in its plane or volume): the tangent
# there.  The 2-d and 3-d nodes take their base's rule.
JVP = {FractionalMaxPoolBackward0: lambda node, inputs, t, meta: [_G.gather_flat(t[0], node.saved("indices"))]}
