"""Pooling on the GPU: torchlite._core.pool's max_pool2d (its own kernel, cuda_kernels/
pool.cu), and, composed of the kernels the backend already has, scatter_planes (its
backward), gather_planes (its double backward), avg_pool2d, avg_pool2d_backward and the
adaptive poolings whose windows tile the input.

The windows are the padded input's strided view (torchlite/cuda/_conv.py `windows`), padded
with zeros for average pooling and made large enough for ceil_mode windows that run past the
padding:

    max_pool2d       one thread per output: the CPU's scan of its window (first maximum, NaN
                     wins, the index in the H*W plane)
    scatter_planes   scatter_add of the gradient into zeros viewed [N, C, H*W]
    gather_planes    gather from the input viewed [N, C, H*W]
    avg_pool2d       a sum over the window dims, divided by the per-output divisors
    backward         the gradient divided by them, added into each window position
    adaptive_*       when the output size divides the input's, the windows tile the input:
                     the same as plain pooling with kernel = stride

Left to the host fallback: the CPU's argument errors, empty sizes, adaptive pooling to a size
that does not divide the input's, and scatter_planes without `add` (max_unpool: the CPU's
last write wins, GPU writes to one element race).
"""
import struct

from .._core import elementwise as _cpu_ew
from .._core import indexing as _cpu_index
from .._core import array as _A
from . import _array, _kernels as K, _launch
from ._conv import (add_windows, composed, compute_dtype, contiguous, finish, flat, interior,
                    is_cuda, made_once, need, padded, pair, require, windows, zeros)
from ._elementwise import binary, cast
from ._indexing import along_dim, scatter_add_in_range
from ._reduction import reduce

ADD, MUL, DIV = (_cpu_ew.BINARY[k] for k in ("add", "mul", "div"))
_MAXABLE = K.FLOATS + (K.INT64, K.INT32, K.INT16, K.INT8, K.UINT8)


class Window:
    """A pooling's kernel, stride, padding and dilation (pairs), checked as the CPU's _set_win.
    Made through `window` (made once per arguments)."""

    def __init__(self, kernel, stride, padding, dilation, OH, OW):
        self.kernel, self.stride = pair(kernel), pair(stride)
        self.padding, self.dilation = pair(padding), pair(dilation)
        require(min(self.kernel + self.stride + self.dilation) >= 1)
        require(min(self.padding) >= 0 and OH >= 1 and OW >= 1)
        self.OH, self.OW = OH, OW

    def span(self, size, d):
        """The padded size along dim d (0: rows) that holds every window, ceil_mode's too."""
        last = ((self.OH, self.OW)[d] - 1) * self.stride[d] + \
            (self.kernel[d] - 1) * self.dilation[d] + 1
        return max(size + 2 * self.padding[d], last)

    def of(self, x, value, dtype):
        """The [N, C, KH, KW, OH, OW] windows of x padded with value, cast to dtype."""
        H, W = x.shape[2:]
        xp = padded(x, *self.padding, value, dtype, self.span(H, 0), self.span(W, 1))
        return windows(xp, self.OH, self.OW, *self.kernel, self.stride, self.dilation)


window = made_once(Window)


def _upload(values, shape, dtype, device):
    return _array.from_host(_A.from_flat(values, shape, dtype), device)


# ---- max pooling -----------------------------------------------------------------------------
@composed("pool", "max_pool2d")
def max_pool2d(x, OH, OW, kernel, stride, padding, dilation):
    """(values, int64 indices into each H*W plane) of max pooling x (N, C, H, W): one
    tl_max_pool2d launch (cuda_kernels/pool.cu), the CPU's choice of element in every case
    (NaNs included)."""
    require(is_cuda(x, 4, _MAXABLE) and x.numel > 0)
    win = window(kernel, stride, padding, dilation, OH, OW)
    N, C, H, W = x.shape
    xc = contiguous(x)
    device = x.device_index
    y = _array.empty((N, C, OH, OW), x.dtype, device)
    idx = _array.empty((N, C, OH, OW), K.INT64, device)
    args = struct.pack("<13q", N * C, H, W, OH, OW, *win.kernel, *win.stride, *win.padding,
                       *win.dilation)
    n = y.numel
    k = _launch.kernel("pool.cu", K.max_pool_kernel(x.dtype), device)
    _launch.launch(k, _launch.grid_for(n, device, 256), 256,
                   [_launch.ptr(xc.data_ptr()), _launch.ptr(y.data_ptr()),
                    _launch.ptr(idx.data_ptr()), _launch.struct(args)])
    return y, idx


def _planes(a, N, C):
    """a (N, C, ...) as [N, C, rest]."""
    return flat(a, (N, C, a.numel // (N * C)))


@composed("pool", "scatter_planes")
def scatter_planes(g, idx, H, W, add):
    """The backward of max pooling: zeros (N, C, H, W), then g scatter-added at idx in each
    plane.  Its one caller is max pooling's autograd node, with the indices its forward kernel
    made (version-checked), so they are not range-checked: no synchronisation with the
    device (the kernel still skips an index out of range)."""
    require(add and is_cuda(g) and g.ndim >= 2 and is_cuda(idx, dtypes=(K.INT64,))
            and idx.shape == g.shape and H >= 1 and W >= 1 and g.numel > 0)
    N, C = g.shape[:2]
    cdt = compute_dtype(g.dtype)
    out = zeros((N, C, H, W), cdt, g.device_index)
    src = _planes(need(cast(g, cdt)), N, C)
    need(scatter_add_in_range(out.view((N, C, H * W)), 2, _planes(idx, N, C), src))
    return finish(out, g.dtype)


@composed("pool", "gather_planes")
def gather_planes(x, idx):
    """y[n, c, j] = x[n, c].flat[idx[n, c, j]] (the gather kernel checks the range)."""
    require(is_cuda(x, 4) and is_cuda(idx, dtypes=(K.INT64,)) and idx.ndim >= 2
            and idx.shape[:2] == x.shape[:2] and idx.numel > 0 and x.numel > 0)
    N, C, H, W = x.shape
    y = need(along_dim(_cpu_index.GATHER, flat(x, (N, C, H * W)), 2, _planes(idx, N, C)))
    return y.view(idx.shape)


# ---- average pooling -------------------------------------------------------------------------
def _axis_divisors(win, size, d, count_include_pad):
    """Per output along dim d: the window's size clipped to the padded input (with
    count_include_pad) or to the input, as the CPU's _avg_window; 1 for a window with no input
    element (its sum is 0, and so is the CPU's result)."""
    out, k, s, p = (win.OH, win.OW)[d], win.kernel[d], win.stride[d], win.padding[d]
    counts = []
    for o in range(out):
        a0 = o * s - p
        a1 = min(a0 + k, size + p)
        inside = min(a1, size) - max(a0, 0)
        counts.append(1 if inside <= 0 else (a1 - a0 if count_include_pad else inside))
    return counts


def _divide(sums, win, H, W, count_include_pad, divisor):
    """sums / the CPU's divisor of each window (the per-axis counts' product, or divisor)."""
    if divisor:
        return need(binary(DIV, sums, divisor))
    dev, dt = sums.device_index, sums.dtype
    rows = _upload(_axis_divisors(win, H, 0, count_include_pad), (win.OH, 1), dt, dev)
    cols = _upload(_axis_divisors(win, W, 1, count_include_pad), (1, win.OW), dt, dev)
    return need(binary(DIV, sums, need(binary(MUL, rows, cols))))


def _avg_args(a, kernel, stride, padding, OH, OW):
    require(is_cuda(a, 4) and a.numel > 0)
    return window(kernel, stride, padding, (1, 1), OH, OW)


@composed("pool", "avg_pool2d")
def avg_pool2d(x, OH, OW, kernel, stride, padding, count_include_pad, divisor):
    """Average pooling: the zero-padded windows summed, then divided."""
    win = _avg_args(x, kernel, stride, padding, OH, OW)
    H, W = x.shape[2:]
    sums = need(reduce("sum", win.of(x, 0, compute_dtype(x.dtype)), (2, 3), False))
    return finish(_divide(sums, win, H, W, count_include_pad, divisor), x.dtype)


@composed("pool", "avg_pool2d_backward")
def avg_pool2d_backward(g, H, W, kernel, stride, padding, count_include_pad, divisor,
                        channels_last=False):
    """The gradient divided by each window's divisor, added into every position of its window
    in a zero-padded buffer (one strided add per window position), then the interior.  The
    result is contiguous whatever channels_last says (the CPU kernel's layout hint)."""
    require(H >= 1 and W >= 1)
    win = _avg_args(g, kernel, stride, padding, *g.shape[2:])
    cdt = compute_dtype(g.dtype)
    share = _divide(need(cast(g, cdt)), win, H, W, count_include_pad, divisor)
    (ph, pw), (KH, KW) = win.padding, win.kernel
    buf = zeros(g.shape[:2] + (win.span(H, 0), win.span(W, 1)), cdt, g.device_index)
    add_windows(windows(buf, win.OH, win.OW, KH, KW, win.stride, (1, 1)),
                share.view(share.shape[:2] + (1, 1) + share.shape[2:]).expand(
                    share.shape[:2] + (KH, KW) + share.shape[2:]))
    dx = need(contiguous(interior(buf, ph, pw, H, W)))
    return finish(dx, g.dtype)


# ---- adaptive pooling whose windows tile the input -----------------------------------------------
def _tiles(a, in_size, out_size):
    """The kernel (= stride) of adaptive pooling of 4-d `a` from in_size planes to out_size
    when the sizes divide: window i then spans [i*k, (i+1)*k), the CPU's floor/ceil bounds.
    Other sizes, whose windows differ in size or overlap, go to the fallback."""
    require(a.ndim == 4 and min(in_size + out_size) >= 1)
    (H, W), (OH, OW) = in_size, out_size
    require(H % OH == 0 and W % OW == 0)
    return H // OH, W // OW


@composed("pool", "adaptive_avg_pool2d")
def adaptive_avg_pool2d(x, OH, OW):
    k = _tiles(x, x.shape[2:], (OH, OW))
    return avg_pool2d(x, OH, OW, k, k, (0, 0), True, 0)


@composed("pool", "adaptive_avg_pool2d_backward")
def adaptive_avg_pool2d_backward(g, H, W):
    k = _tiles(g, (H, W), g.shape[2:])
    return avg_pool2d_backward(g, H, W, k, k, (0, 0), True, 0)


@composed("pool", "adaptive_max_pool2d")
def adaptive_max_pool2d(x, OH, OW):
    k = _tiles(x, x.shape[2:], (OH, OW))
    return max_pool2d(x, OH, OW, k, k, (0, 0), (1, 1))
