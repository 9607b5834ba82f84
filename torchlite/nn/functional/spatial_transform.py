"""Spatial transformers (torch.nn.functional): affine_grid and grid_sample.

affine_grid is PyTorch's affine_grid_generator: a base grid of normalised pixel coordinates
(x, y[, z], 1) times theta transposed, one bmm per batch.

grid_sample reads input (N, C, H, W) / (N, C, D, H, W) at the normalised locations of grid
(N, Ho, Wo, 2) / (N, Do, Ho, Wo, 3), x (width) first, as PyTorch's grid_sampler does:

  1. unnormalise each coordinate to pixel units (align_corners: -1 and 1 are the centres of
     the corner pixels, else their outer edges);
  2. padding_mode 'border' clips it to [0, size - 1], 'reflection' reflects it off the
     borders (by align_corners' borders) and then clips; 'zeros' leaves it;
  3. mode 'bilinear' (trilinear for 5-d) blends the 2^d neighbouring pixels by their
     distances, 'nearest' takes the pixel at the coordinate rounded half to even, 'bicubic'
     (4-d only) blends 4 x 4 pixels with the cubic convolution weights (A = -0.75), each tap
     position padded as in step 2 (the coordinate itself is not clipped in this mode); a
     pixel outside the input reads as 0.

Each neighbour is a gather of the flattened input planes by the neighbours' flat indices,
weighted and summed: compositions of differentiable ops, so the gradient reaches input (a
scatter-add) and grid (through the weights and the unnormalising, clipping and reflecting,
which have PyTorch's derivatives: a clipped coordinate gets none, a reflected one the sign
of its reflection)."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..._tensor import Tensor
from ... import _dtype as D
from ...autograd.grad_mode import no_grad
from ..._ops.creation import linspace, ones, zeros
from ..._ops.joining import stack
from ..._ops.elementwise import where

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["affine_grid", "grid_sample"]

_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                 "float64": "Double"}
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


# ---- affine_grid ---------------------------------------------------------------------------------
def _linspace_from_neg_one(theta, steps, align_corners):
    """The normalised coordinates of `steps` pixel centres (PyTorch's linspace_from_neg_one)."""
    if steps <= 1:
        return zeros((), dtype=theta.dtype, device=theta.device)
    r = linspace(-1, 1, steps, dtype=theta.dtype, device=theta.device)
    if not align_corners:
        r = r * (steps - 1) / steps
    return r


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta
    (N, 2, 3) (or (N, 3, 4)) for an output of size (N, C, H, W) (or (N, C, D, H, W))."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{tuple(size)}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{tuple(size)}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {tuple(size)}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    n = size[0]
    nd = len(spatial)
    with no_grad():
        # (x, y[, z], 1) at every output pixel, x along the last dim
        axes = [_linspace_from_neg_one(theta, s, align_corners) for s in reversed(spatial)]
        shape = [n] + spatial
        cols = []
        for i, a in enumerate(axes):        # x varies along W, y along H, z along D
            view = [1] * (nd + 1)
            if a.dim():
                view[nd - i] = a.shape[0]
            cols.append(a.reshape(view).expand(*shape))
        cols.append(ones(shape, dtype=theta.dtype, device=theta.device))
        points = 1
        for v in spatial:
            points *= v
        base = stack(cols, -1).reshape(n, points, nd + 1)
    grid = base.bmm(theta.transpose(1, 2))
    return grid.view(*shape, nd)


# ---- coordinates ---------------------------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    if align_corners:
        return ((coord + 1) / 2) * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size):
    """coord clipped to [0, size - 1], with PyTorch's derivative: 1 strictly inside, 0 on and
    beyond the borders.  A NaN coordinate (a NaN in the grid, or an infinite one reflected)
    clips to 0, as in PyTorch's CPU kernel for 4-d input and its CUDA kernels."""
    inside = (coord > 0) & (coord < size - 1)
    return where(inside, coord, coord.detach().clamp(0, size - 1).nan_to_num(0.0))


def _reflect(coord, twice_low, twice_high):
    """coord reflected off the borders twice_low / 2 and twice_high / 2 until inside them."""
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    dist = (coord - low).abs()
    extra = dist.fmod(span)
    flips = (dist.detach() / span).floor()
    even = flips.remainder(2) == 0
    return where(even, extra + low, (span - extra) + low)


def _padded(coord, size, padding_mode, align_corners):
    """The coordinate after the padding mode's clipping or reflection (step 2)."""
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return _clip(coord, size)
    return coord


# ---- sampling ---------------------------------------------------------------------------------------
class _Reader:
    """Reads input (N, C, *spatial) at integer pixel positions: each read is a gather of the
    flattened planes; positions outside the input read 0."""

    def __init__(self, input, out_shape):
        self.n, self.c = input.shape[:2]
        self.spatial = list(input.shape[2:])
        planes = 1
        for s in self.spatial:
            planes *= s
        self.flat = input.reshape(self.n, self.c, planes)
        self.count = 1                      # output positions per image
        for s in out_shape[1:]:
            self.count *= s

    def read(self, positions):
        """positions: one float tensor of whole numbers per spatial dim (x last), each of the
        output's shape: the values there (N, C, L), zero where outside."""
        with no_grad():
            valid = None
            flat_index = None
            stride = 1
            for p, size in zip(reversed(positions), reversed(self.spatial)):
                ok = (p >= 0) & (p <= size - 1)
                valid = ok if valid is None else valid & ok
                i = p.to(D.int64).clamp(0, size - 1)
                flat_index = i * stride if flat_index is None else flat_index + i * stride
                stride *= size
            index = flat_index.reshape(self.n, 1, self.count).expand(self.n, self.c, self.count)
        values = self.flat.gather(2, index)
        return values, valid.reshape(self.n, 1, self.count)


def _weight(w, valid):
    """A weight (N, *out) as (N, 1, L), zero where the pixel is outside -- selected, not
    multiplied, so that a NaN weight (a NaN grid coordinate) sends no gradient to the input,
    as PyTorch's backward skips such taps."""
    return where(valid, w.reshape(tuple(valid.shape)), 0.0)


def _nonfinite_nan(coords, reader):
    """(N, 1, L): NaN where a sample point's coordinate is NaN or infinite, else 0 (outside the
    graph).  There every tap's weight is NaN and PyTorch's forward multiplies it into the
    output (a tap outside the input by a zero value), so the output is NaN; _weight keeps
    those taps out of the gradient, and this adds their NaN to the forward once."""
    poison = None
    for c in coords:
        term = c.detach() * 0.0
        poison = term if poison is None else poison + term
    return poison.reshape(reader.n, 1, reader.count)


def _bilinear(reader, coords):
    """2^d-neighbour linear blend at coords (one per spatial dim, x last)."""
    lows = [c.detach().floor() for c in coords]
    # per dim: (position, weight) of the lower and upper neighbour
    taps = [((lo, (lo + 1) - c), (lo + 1, c - lo)) for c, lo in zip(coords, lows)]
    out = None
    nd = len(coords)
    for corner in range(2 ** nd):
        picks = [taps[d][(corner >> (nd - 1 - d)) & 1] for d in range(nd)]
        w = picks[0][1]
        for p in picks[1:]:
            w = w * p[1]
        values, valid = reader.read([p[0] for p in picks])
        term = values * _weight(w, valid)
        out = term if out is None else out + term
    return out + _nonfinite_nan(coords, reader)


def _nearest(reader, coords):
    values, valid = reader.read([c.detach().round() for c in coords])
    # the grid gets PyTorch's gradient, zeros, rather than none: a where that never picks
    # the coordinate links it to the output
    c = coords[0]
    link = where(zeros(tuple(c.shape), dtype=D.bool, device=c.device), c, 0.0)
    return values * (valid.to(c.dtype) + link.reshape(tuple(valid.shape)))


def _cubic_coefficients(t):
    """The four cubic convolution weights (A = -0.75) of taps -1, 0, 1, 2 at fraction t."""
    a = -0.75

    def near(x):                # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):                 # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far((1 - t) + 1)]


def _bicubic(reader, coords, padding_mode, align_corners):
    """4 x 4 taps; each tap position is padded (clipped or reflected) on its own."""
    y, x = coords
    y0, x0 = y.detach().floor(), x.detach().floor()
    cy, cx = _cubic_coefficients(y - y0), _cubic_coefficients(x - x0)
    h, w = reader.spatial
    with no_grad():
        # whole-number taps stay whole when clipped or reflected (about a border or a
        # half-pixel border); the reader truncates them to indices as PyTorch does
        ys = [_padded(y0 + (j - 1), h, padding_mode, align_corners) for j in range(4)]
        xs = [_padded(x0 + (i - 1), w, padding_mode, align_corners) for i in range(4)]
    out = None
    for j in range(4):
        for i in range(4):
            values, valid = reader.read([ys[j], xs[i]])
            term = values * _weight(cx[i] * cy[j], valid)
            out = term if out is None else out + term
    return out + _nonfinite_nan(coords, reader)


def _check_sampler(input, grid, mode):
    if not isinstance(input, Tensor) or not isinstance(grid, Tensor):
        bad = "input" if not isinstance(input, Tensor) else "grid"
        raise TypeError(f"grid_sampler(): argument '{bad}' must be Tensor")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"expected scalar type {_SCALAR_NAMES[input.dtype.name]} but found "
                           f"{_SCALAR_NAMES[grid.dtype.name]}")
    ishape, gshape = list(input.shape), list(grid.shape)
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        if input.dim() == 4 or (input.dim() != 5 and grid.dim() == 4):
            raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of "
                               f"dimensions, but got input with sizes {ishape} and grid with "
                               f"sizes {gshape}")
        if input.dim() == 5:
            raise RuntimeError(f"grid_sampler(): expected 5D input and grid with same number of "
                               f"dimensions, but got input with sizes {ishape} and grid with "
                               f"sizes {gshape}")
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {ishape} and grid with sizes {gshape}")
    if ishape[0] != gshape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but "
                           f"got input with sizes {ishape} and grid with sizes {gshape}")
    nd = input.dim() - 2
    if gshape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last dimension, "
                           f"but got grid with sizes {gshape}")
    for i in range(2, input.dim()):
        if ishape[i] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {ishape} with dimension {i} "
                               f"being empty")
    if mode == "bicubic" and nd == 3:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"grid_sampler_{nd}d_cpu_kernel_impl\" not implemented for "
                                  f"'{_SCALAR_NAMES[input.dtype.name]}'")


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Samples input (N, C, H, W) or (N, C, D, H, W) at the normalised locations grid
    (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3): the output is (N, C, Ho, Wo) or (N, C, Do, Ho, Wo).
    Modes 'bilinear', 'nearest', 'bicubic' (4-d); padding_mode 'zeros', 'border',
    'reflection'."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_sampler(input, grid, mode)
    nd = input.dim() - 2
    n, c = input.shape[:2]
    out_spatial = list(grid.shape[1:-1])
    reader = _Reader(input, [n] + out_spatial)
    sizes = list(input.shape[2:])
    # grid's last dim lists x (W) first: coords in dim order (z,) y, x
    coords = [_unnormalize(grid[..., nd - 1 - d], sizes[d], align_corners) for d in range(nd)]
    if mode == "bicubic":
        out = _bicubic(reader, coords, padding_mode, align_corners)
    else:
        coords = [_padded(cd, s, padding_mode, align_corners) for cd, s in zip(coords, sizes)]
        out = _bilinear(reader, coords) if mode == "bilinear" else _nearest(reader, coords)
    return out.view(n, c, *out_spatial)
