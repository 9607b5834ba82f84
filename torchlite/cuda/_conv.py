"""Convolution on the GPU, composed of the kernels the backend already has: torchlite._core.
conv's conv2d_forward, conv2d_input_grad, conv2d_weight_grad, im2col and col2im.

The columns of a convolution are a view: the (zero-padded) input seen as [N, C, KH, KW, OH,
OW] windows by strides alone; the copy kernel makes them a matrix, and the GEMM does the rest:

    forward        y[n, g] = W[g] @ cols[n, g]            one batched GEMM (W broadcast over n)
    input grad     cols[n, g] = W[g]^T @ gy[n, g]         then col2im (cuda_kernels/conv.cu)
    weight grad    dW[g] = gy[g] @ cols[g]^T              the images folded into the GEMM's K

The images go through in batches whose columns fit in COLUMN_BUDGET elements (all at once
but for big convolutions), which bounds the buffers.  As on the CPU, float16 and bfloat16 are
computed in float32 and the result rounded back.  Arguments the CPU would reject, and empty
sizes, go to the host fallback (it raises the CPU's errors and builds its empty results).

Also here: the helpers the other composed natives share (torchlite/cuda/_pool.py, _norm.py,
_loss.py): `composed` registers a native whose inner calls may bail out with `need`, the
padded-input buffer and the window view.
"""
import functools
import struct

from .._core import elementwise as _cpu_ew
from . import _array, _kernels as K, _launch
from ._array import CudaArray
from ._elementwise import binary, cast, copy_
from ._matmul import bmm, sum_pieces
from ._registry import native

ADD = _cpu_ew.BINARY["add"]


# ---- helpers shared by the composed natives --------------------------------------------------
class Fallback(Exception):
    """Raised inside a composed native for a case it leaves to the host fallback."""


def need(result):
    """result, unless a native it came from declined the case (NotImplemented)."""
    if result is NotImplemented:
        raise Fallback
    return result


def require(condition):
    """Leave the call to the host fallback unless `condition` holds (the CPU's argument checks
    and the cases the composition does not cover)."""
    if not condition:
        raise Fallback


def composed(module, name):
    """Register the decorated function as the CUDA version of torchlite._core.<module>.<name>:
    a Fallback raised inside it sends the call to the host fallback."""
    def register(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Fallback:
                return NotImplemented
        native(module, name, kernel=True)(run)
        return run
    return register


def compute_dtype(dtype):
    """The dtype the CPU computes a float dtype in: float64, else float32."""
    return K.FLOAT64 if dtype == K.FLOAT64 else K.FLOAT32


def is_cuda(a, ndim=None, dtypes=K.FLOATS):
    return isinstance(a, CudaArray) and (ndim is None or a.ndim == ndim) and a.dtype in dtypes


def pair(v):
    """The two ints of a (stride, padding, ...) argument, as the CPU reads them."""
    try:
        t = tuple(int(a) for a in v)
    except (TypeError, ValueError):
        raise Fallback from None
    require(len(t) == 2)
    return t


def flat(a, shape):
    """a viewed as `shape`: a view when a's strides allow, else a contiguous copy's view."""
    v = a.view(shape)
    if v is None:
        v = need(contiguous(a)).view(shape)
    return v


def contiguous(a):
    from ._copy import contiguous as contiguous_
    return contiguous_(a)


def fill_(a, value):
    from ._copy import fill_ as fill
    return fill(a, value)


def zeros(shape, dtype, device):
    out = _array.empty(shape, dtype, device)
    need(fill_(out, 0))
    return out


def finish(r, dtype):
    """A result computed in float32/float64 in the caller's dtype (rounded once, as the CPU)."""
    return r if r.dtype == dtype else need(cast(r, dtype))


def padded(x, ph, pw, value, dtype, height=None, width=None):
    """x (N, C, H, W) cast to `dtype` inside a new (N, C, height, width) array filled with
    `value` (height: H + 2ph unless more is asked), at row ph and column pw; x cast, with its
    own strides, when there is no border."""
    N, C, H, W = x.shape
    height = H + 2 * ph if height is None else height
    width = W + 2 * pw if width is None else width
    if (height, width) == (H, W):
        return need(cast(x, dtype))
    buf = _array.empty((N, C, height, width), dtype, x.device_index)
    need(fill_(buf, value))
    need(copy_(interior(buf, ph, pw, H, W), x))
    return buf


def interior(buf, ph, pw, H, W):
    """The (N, C, H, W) view of buf starting at row ph, column pw."""
    s = buf.strides
    return buf.as_strided(buf.shape[:2] + (H, W), s, buf.offset + ph * s[2] + pw * s[3])


def windows(xp, OH, OW, KH, KW, stride, dilation):
    """The [N, C, KH, KW, OH, OW] view of the windows of xp (N, C, H, W): element
    [n, c, i, j, oh, ow] is xp[n, c, oh * sh + i * dh, ow * sw + j * dw].  No copy."""
    s0, s1, s2, s3 = xp.strides
    (sh, sw), (dh, dw) = stride, dilation
    return xp.as_strided(xp.shape[:2] + (KH, KW, OH, OW),
                         (s0, s1, dh * s2, dw * s3, sh * s2, sw * s3), xp.offset)


def add_windows(dst, src):
    """dst[:, :, i, j] += src[:, :, i, j] for each window position (i, j): the adjoint of
    taking windows (col2im).  One launch per position, so each adds into distinct elements."""
    for i in range(dst.shape[2]):
        for j in range(dst.shape[3]):
            d = dst.select(2, i).select(2, j)
            need(binary(ADD, d, src.select(2, i).select(2, j), out=d))


# ---- geometry --------------------------------------------------------------------------------
class Geometry:
    """A convolution's sizes: input (N, C, H, W), weight (O, C/G, KH, KW), output (OH, OW).
    Made through `geometry`, which keeps the recent ones (a training loop repeats them)."""

    __slots__ = ("N", "C", "H", "W", "O", "KH", "KW", "stride", "padding", "dilation", "G",
                 "OH", "OW", "Cg", "Og", "CKK", "L")

    def __init__(self, N, C, H, W, O, KH, KW, stride, padding, dilation, groups):
        """The CPU's checks (torchlite/_core/conv.pyx _set_geom); a failing one, or an empty
        size anywhere, leaves the call to the fallback."""
        self.stride, self.padding, self.dilation = pair(stride), pair(padding), pair(dilation)
        require(min(self.stride) >= 1 and min(self.padding) >= 0 and min(self.dilation) >= 1)
        require(KH >= 1 and KW >= 1 and groups >= 1 and C % groups == 0 and O % groups == 0)
        require(min(N, C, H, W, O) >= 1)
        self.N, self.C, self.H, self.W, self.O, self.KH, self.KW, self.G = \
            N, C, H, W, O, KH, KW, groups
        self.OH = self._out(H, KH, 0)
        self.OW = self._out(W, KW, 1)
        require(self.OH >= 1 and self.OW >= 1)
        self.Cg, self.Og = C // groups, O // groups      # channels per group
        self.CKK = self.Cg * KH * KW                       # a column's length
        self.L = self.OH * self.OW                         # output pixels per image

    def _out(self, size, k, d):
        span = size + 2 * self.padding[d] - self.dilation[d] * (k - 1) - 1
        return span // self.stride[d] + 1 if span >= 0 else 0

    def windows(self, x, dtype):
        """The [n, C, KH, KW, OH, OW] windows of x (n images) zero-padded and cast to dtype
        (a view)."""
        ph, pw = self.padding
        xp = padded(x, ph, pw, 0, dtype)
        return windows(xp, self.OH, self.OW, self.KH, self.KW, self.stride, self.dilation)

    def im2col(self, x, dtype):
        """The windows of x (n images) zero-padded, cast to dtype and copied into a new
        contiguous [n, C, KH, KW, OH, OW] array: by the tl_im2col kernel in one pass for
        float32/float64 inputs, else as a copy of the window view of a padded copy."""
        if x.dtype != dtype or dtype not in (K.FLOAT32, K.FLOAT64):
            return need(contiguous(self.windows(x, dtype)))
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        n = x.shape[0]
        cols = _array.empty((n, self.C, self.KH, self.KW, self.OH, self.OW), dtype, x.device_index)
        args = struct.pack("<18q", n, self.C, self.H, self.W, self.KH, self.KW, self.OH, self.OW,
                           sh, sw, ph, pw, dh, dw, *x.strides)
        device = x.device_index
        k = _launch.kernel("conv.cu", K.im2col_kernel(dtype), device)
        _launch.launch(k, _launch.grid_for(cols.numel, device, 256), 256,
                       [_launch.ptr(x.data_ptr()), _launch.ptr(cols.data_ptr()), _launch.struct(args)])
        return cols

    def col2im(self, cols, out):
        """out (n, C, H, W), contiguous, = the sum of cols [n, C, KH, KW, OH, OW] over the
        windows, by the tl_col2im gather kernel (cuda_kernels/conv.cu)."""
        cols = contiguous(cols)
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        args = struct.pack("<13q", out.shape[0] * out.shape[1], self.H, self.W, self.KH,
                           self.KW, self.OH, self.OW, sh, sw, ph, pw, dh, dw)
        n, device = out.numel, out.device_index
        k = _launch.kernel("conv.cu", K.col2im_kernel(out.dtype), device)
        _launch.launch(k, _launch.grid_for(n, device, 256), 256,
                       [_launch.ptr(cols.data_ptr()), _launch.ptr(out.data_ptr()),
                        _launch.struct(args)])

    def batches(self):
        """(first, end) image ranges whose columns fit in COLUMN_BUDGET elements (one range
        for all but big convolutions: the column buffers grow with the batch)."""
        per_image = max(1, self.C * self.KH * self.KW * self.L)
        step = max(1, COLUMN_BUDGET // per_image)
        return [(n, min(n + step, self.N)) for n in range(0, self.N, step)]


COLUMN_BUDGET = 1 << 26         # elements of the im2col buffers one GEMM takes


def made_once(cls):
    """A constructor of `cls` that gives the same object for the same arguments (the recent
    256; a training loop repeats them), for a class whose objects are never changed after they
    are made; arguments that cannot be a cache key (lists) make a new one each time."""
    cached = functools.lru_cache(maxsize=256, typed=True)(cls)     # typed: groups=2.0 is not 2

    def make(*args):
        try:
            return cached(*args)
        except TypeError:                 # unhashable: stride=[1, 1]
            return cls(*args)
    make.__doc__ = f"{cls.__name__}(...), made once per arguments (made_once)."
    return make


geometry = made_once(Geometry)


def _images(a, n0, n1):
    return a.slice(0, n0, n1, 1)


def _conv_operands(a, b):
    require(is_cuda(a, 4) and is_cuda(b, 4) and a.dtype == b.dtype)


def _weight_matrix(w, g, dtype):
    """w (O, Cg, KH, KW) as [G, Og, CKK] in dtype."""
    return flat(need(cast(w, dtype)), (g.G, g.Og, g.CKK))


# ---- the natives -----------------------------------------------------------------------------
@composed("conv", "conv2d_forward")
def conv2d_forward(x, w, bias, stride, padding, dilation, groups, channels_last=False):
    """y = conv2d(x, w) + bias, by im2col (tl_im2col, or the window view copied) and one
    batched GEMM whose addend is the bias.  The result is contiguous whatever channels_last
    says (the caller lays it out as PyTorch would)."""
    _conv_operands(x, w)
    g = geometry(*x.shape, w.shape[0], w.shape[2], w.shape[3], stride, padding, dilation, groups)
    require(w.shape[1] == g.Cg)
    require(bias is None or (is_cuda(bias, 1) and bias.shape[0] == g.O and bias.dtype == x.dtype))
    cdt = compute_dtype(x.dtype)
    wm = _weight_matrix(w, g, cdt).unsqueeze(0)
    y = _array.empty((g.N, g.O, g.OH, g.OW), cdt, x.device_index)
    # a bias of the compute dtype is the GEMM's addend, read in place (stride 0 over images
    # and pixels): no pass of its own
    fused_bias = bias is not None and bias.dtype == cdt
    for n0, n1 in g.batches():
        n = n1 - n0
        cols = g.im2col(_images(x, n0, n1), cdt).view((n, g.G, g.CKK, g.L))
        yn = _images(y, n0, n1).view((n, g.G, g.Og, g.L))
        addend = bias.as_strided((n, g.G, g.Og, g.L), (0, g.Og * bias.strides[0], bias.strides[0], 0),
                                 bias.offset) if fused_bias else None
        need(bmm(wm.expand((n, g.G, g.Og, g.CKK)), cols, out=yn, beta=1 if fused_bias else 0,
                 addend=addend))
    if bias is not None and not fused_bias:
        view = bias.as_strided((1, g.O, 1, 1), (0, bias.strides[0], 0, 0), bias.offset)
        need(binary(ADD, y, view, out=y))
    return finish(y, x.dtype)


@composed("conv", "conv2d_input_grad")
def conv2d_input_grad(gy, w, H, W, stride, padding, dilation, groups, channels_last=False):
    """dx = col2im(W^T @ gy): a batched GEMM into the columns, then the col2im kernel (a 1x1
    stride-1 unpadded convolution needs no col2im).  Contiguous, as conv2d_forward's."""
    _conv_operands(gy, w)
    g = geometry(gy.shape[0], w.shape[1] * groups, H, W, w.shape[0], w.shape[2], w.shape[3],
                 stride, padding, dilation, groups)
    require(gy.shape[1:] == (g.O, g.OH, g.OW))
    cdt = compute_dtype(gy.dtype)
    gm = flat(need(cast(gy, cdt)), (g.N, g.G, g.Og, g.L))
    wt = _weight_matrix(w, g, cdt).transpose(1, 2).unsqueeze(0)
    dx = _array.empty((g.N, g.C, H, W), cdt, gy.device_index)
    pointwise = (g.KH, g.KW, g.stride, g.padding) == (1, 1, (1, 1), (0, 0))
    for n0, n1 in g.batches():
        n, dxn = n1 - n0, _images(dx, n0, n1)
        wtn = wt.expand((n, g.G, g.CKK, g.Og))
        if pointwise:                           # the columns are dx itself
            need(bmm(wtn, _images(gm, n0, n1), out=dxn.view((n, g.G, g.Cg, g.L))))
            continue
        cols = _array.empty((n, g.G, g.CKK, g.L), cdt, gy.device_index)
        need(bmm(wtn, _images(gm, n0, n1), out=cols))
        g.col2im(cols.view((n, g.C, g.KH, g.KW, g.OH, g.OW)), dxn)
    return finish(dx, gy.dtype)


@composed("conv", "conv2d_weight_grad")
def conv2d_weight_grad(x, gy, KH, KW, stride, padding, dilation, groups):
    """dW[g] = the sum over images of gy[n, g] @ cols[n, g]^T.  Small enough (PER_IMAGE), one
    GEMM per image into a workspace (gy and the im2col columns used as they are), summed
    over the images in order (tl_gemm_splitk_sum); else with the images folded into the
    product's inner dim: the columns copied as [G, CKK, n, L] and gy as [G, Og, n, L], then
    one GEMM per group (each batch of images after the first adds into dW)."""
    _conv_operands(x, gy)
    g = geometry(*x.shape, gy.shape[1], KH, KW, stride, padding, dilation, groups)
    require(gy.shape[0] == g.N and gy.shape[2:] == (g.OH, g.OW))
    cdt = compute_dtype(x.dtype)
    gyg = need(cast(gy, cdt)).view((g.N, g.G, g.Og, g.OH, g.OW))
    dw = _array.empty((g.O, g.Cg, g.KH, g.KW), cdt, x.device_index)
    per_image = g.N * g.O * g.CKK <= PER_IMAGE and gyg.is_contiguous()
    for n0, n1 in g.batches():
        n = n1 - n0
        if per_image:
            cols = g.im2col(_images(x, n0, n1), cdt).view((n, g.G, g.CKK, g.L))
            work = _array.empty((n, g.G, g.Og, g.CKK), cdt, x.device_index)
            gm = _images(gyg, n0, n1).view((n, g.G, g.Og, g.L))
            need(bmm(gm, cols.transpose(2, 3), out=work))
            sum_pieces(work, n, dw.view((g.O, g.CKK)), beta=0 if n0 == 0 else 1)
            continue
        win = g.windows(_images(x, n0, n1), cdt).view((n, g.G, g.Cg, g.KH, g.KW, g.OH, g.OW))
        cols = flat(win.permute((1, 2, 3, 4, 0, 5, 6)), (g.G, g.CKK, n * g.L))
        gm = flat(_images(gyg, n0, n1).permute((1, 2, 0, 3, 4)), (g.G, g.Og, n * g.L))
        need(bmm(gm, cols.transpose(1, 2), out=dw.view((g.G, g.Og, g.CKK)),
                 beta=0 if n0 == 0 else 1))
    return finish(dw, x.dtype)


PER_IMAGE = 1 << 22     # workspace elements (images x weights) up to which dW is summed per image


@composed("conv", "im2col")
def im2col(x, kernel_size, dilation, padding, stride):
    """unfold: the window view copied into a new (N, C*KH*KW, L) array (in x's dtype: a copy
    is exact, as the CPU's float32 round trip)."""
    require(is_cuda(x, 4))
    kh, kw = pair(kernel_size)
    g = geometry(*x.shape, x.shape[1], kh, kw, stride, padding, dilation, 1)
    out = _array.empty((g.N, g.CKK, g.L), x.dtype, x.device_index)
    need(copy_(out.view((g.N, g.C, g.KH, g.KW, g.OH, g.OW)), g.windows(x, x.dtype)))
    return out


@composed("conv", "col2im")
def col2im(cols, output_size, kernel_size, dilation, padding, stride):
    """fold: the columns summed into their windows (the tl_col2im kernel), in float32/float64."""
    require(is_cuda(cols, 3))
    kh, kw = pair(kernel_size)
    H, W = pair(output_size)
    require(kh >= 1 and kw >= 1 and cols.shape[1] % (kh * kw) == 0)
    C = cols.shape[1] // (kh * kw)
    g = geometry(cols.shape[0], C, H, W, C, kh, kw, stride, padding, dilation, 1)
    require(cols.shape[2] == g.L)
    cdt = compute_dtype(cols.dtype)
    x = _array.empty((g.N, g.C, H, W), cdt, cols.device_index)
    g.col2im(flat(need(cast(cols, cdt)), (g.N, g.C, g.KH, g.KW, g.OH, g.OW)), x)
    return finish(x, cols.dtype)
