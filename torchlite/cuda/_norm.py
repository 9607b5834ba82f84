"""Batch norm and layer norm on the GPU, composed of the reduction and elementwise kernels
(plus batch norm's per-channel coefficients, cuda_kernels/norm.cu):
torchlite._core.norm's batch_norm_stats, batch_norm_grad_sums, batch_norm_forward,
batch_norm_backward, layer_norm_forward and layer_norm_backward.

Each follows its CPU function's formulas and dtypes (torchlite/_core/norm.pyx): the
statistics come from the var/mean reduction (a float64 Welford accumulator on the device,
rounded once to x's dtype), per-channel coefficients are computed in float64 on [C] vectors
and rounded to x's dtype, and the passes over x run in x's dtype:

    batch norm      y = x * scale[c] + shift[c]                      (one addcmul)
    its backward    dx = g * a[c] + (x - mean[c]) * b[c] + c[c]      (two addcmuls)
    layer norm      y = (x - mean[r]) * rstd[r] * w + b
    its backward    dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)),  gh = g * w

Like the CPU functions these take contiguous float32/float64 arrays; anything else, and
empty inputs, goes to the host fallback (which raises the CPU's errors).
"""
from .._core import elementwise as _cpu_ew
from . import _array, _kernels as K, _launch
from ._conv import composed, is_cuda, need, require
from ._elementwise import binary, cast, ternary, unary
from ._reduction import mean, reduce, var

ADD, SUB, MUL, DIV = (_cpu_ew.BINARY[k] for k in ("add", "sub", "mul", "div"))
SQRT, RECIPROCAL, NEG = (_cpu_ew.UNARY[k] for k in ("sqrt", "reciprocal", "neg"))
ADDCMUL = _cpu_ew.TERNARY["addcmul"]
_REAL = (K.FLOAT32, K.FLOAT64)


def _dense(a, ndim, dtypes=_REAL):
    return is_cuda(a, ndim, dtypes) and a.is_contiguous()


def _vector(a, n, dtype):
    """None, or a contiguous [n] array of dtype: the CPU's _check_vec."""
    require(a is None or (_dense(a, 1, (dtype,)) and a.shape[0] == n))


def _f64(a):
    return need(cast(a, K.FLOAT64))


def _mul(a, b):
    return need(binary(MUL, a, b))


def _inverse_std(v, eps):
    """1 / sqrt(v + eps), as the CPU computes it (not the approximate rsqrt)."""
    return need(unary(RECIPROCAL, need(unary(SQRT, need(binary(ADD, v, eps))))))


def _in(dtype, v, shape):
    """Vector v rounded to dtype and viewed as `shape`, to broadcast along x's channels
    (1, C, 1) or rows (M, 1)."""
    return need(cast(v, dtype)).view(shape)


def _centered(x, m, shape):
    """x - m, m rounded to x's dtype first (as the CPU's loops take it) and viewed as shape."""
    return need(binary(SUB, x, _in(x.dtype, m, shape)))


# ---- batch norm --------------------------------------------------------------------------------
def _coefs(kind, dtype, C, device, args):
    """Launch the per-channel coefficients of batch norm (cuda_kernels/norm.cu), a thread
    per channel."""
    k = _launch.kernel("norm.cu", K.batch_norm_coefs_kernel(kind, dtype), device)
    _launch.launch(k, _launch.grid_for(C, device, 128, 1), 128, args)
def _stats(x):
    v, m = need(var(x, (0, 2), 0, False, False, True))
    return _f64(m), _f64(v)


@composed("norm", "batch_norm_stats")
def batch_norm_stats(x):
    """(mean, biased var) per channel of contiguous x [N, C, S], as float64 [C] arrays."""
    require(_dense(x, 3) and x.numel > 0)
    return _stats(x)


def _grad_sums(g, xc):
    """(sum(g), sum(g * xc)) per channel, float64 [C] (the reductions accumulate in float64)."""
    return (_f64(need(reduce("sum", g, (0, 2), False))),
            _f64(need(reduce("sum", _mul(g, xc), (0, 2), False))))


def _check_grad(g, x):
    require(_dense(x, 3) and _dense(g, 3, (x.dtype,)) and g.shape == x.shape and x.numel > 0)


@composed("norm", "batch_norm_grad_sums")
def batch_norm_grad_sums(g, x, mean_):
    """(sum(g), sum(g * (x - mean))) per channel of contiguous g, x [N, C, S]; float64 [C]."""
    _check_grad(g, x)
    C = x.shape[1]
    _vector(mean_, C, K.FLOAT64)
    require(mean_ is not None)
    return _grad_sums(g, _centered(x, mean_, (1, C, 1)))


@composed("norm", "batch_norm_forward")
def batch_norm_forward(x, w, b, mean_, var_, eps):
    """(y, mean, var, invstd) of batch norm over contiguous x [N, C, S]; mean/var: the float64
    statistics to use (eval), or None for the batch's own."""
    require(_dense(x, 3) and x.numel > 0)
    C = x.shape[1]
    _vector(w, C, x.dtype)
    _vector(b, C, x.dtype)
    require((mean_ is None) == (var_ is None))
    if mean_ is None:
        mean_, var_ = _stats(x)
    else:
        _vector(mean_, C, K.FLOAT64)
        _vector(var_, C, K.FLOAT64)
    device = x.device_index
    invstd = _array.empty((C,), K.FLOAT64, device)
    scale, shift = (_array.empty((C,), x.dtype, device) for _ in range(2))
    _coefs("forward", x.dtype, C, device,
           [_launch.ptr_of(mean_), _launch.ptr_of(var_), _launch.ptr_of(w), _launch.ptr_of(b),
            _launch.f64(eps), _launch.i64(C), _launch.ptr_of(invstd), _launch.ptr_of(scale),
            _launch.ptr_of(shift)])
    y = need(ternary(ADDCMUL, shift.view((1, C, 1)), x, scale.view((1, C, 1))))
    return y, mean_, var_, invstd


@composed("norm", "batch_norm_backward")
def batch_norm_backward(g, x, mean_, invstd, w, batch_stats, want_dx, want_dw, want_db):
    """(dx, dw, db) of batch norm (None where not wanted), from the forward's float64
    statistics; batch_stats: they were the batch's, so dx has their terms."""
    _check_grad(g, x)
    N, C, S = x.shape
    for v in (mean_, invstd):
        _vector(v, C, K.FLOAT64)
        require(v is not None)
    _vector(w, C, x.dtype)
    device = x.device_index
    xc = _centered(x, mean_, (1, C, 1))
    sum_g = sum_gxc = None                      # null: the kernel reads them only when needed
    if batch_stats or want_dw or want_db:
        sum_g, sum_gxc = _grad_sums(g, xc)
    dw = _array.empty((C,), x.dtype, device) if want_dw else None
    db = _array.empty((C,), x.dtype, device) if want_db else None
    ka, km, kb, kc = (_array.empty((C,), x.dtype, device) for _ in range(4))
    _coefs("backward", x.dtype, C, device, [
        _launch.ptr_of(sum_g), _launch.ptr_of(sum_gxc), _launch.ptr_of(mean_), _launch.ptr_of(invstd),
        _launch.ptr_of(w), _launch.f64(N * S), _launch.i32(1 if batch_stats else 0), _launch.i64(C),
        _launch.ptr_of(ka), _launch.ptr_of(km), _launch.ptr_of(kb),
        _launch.ptr_of(kc), _launch.ptr_of(dw), _launch.ptr_of(db)])
    dx = None
    if want_dx:
        dx = need(ternary(ADDCMUL, kc.view((1, C, 1)), xc, kb.view((1, C, 1))))   # c + (x - m) b
        need(ternary(ADDCMUL, dx, g, ka.view((1, C, 1)), out=dx))                 # ... + g a
    return dx, dw, db


# ---- layer norm --------------------------------------------------------------------------------
@composed("norm", "layer_norm_forward")
def layer_norm_forward(x, w, b, eps):
    """(y, mean, rstd) of contiguous x [M, K]; mean and rstd [M] of x's dtype."""
    require(_dense(x, 2) and x.numel > 0)
    M, Kn = x.shape
    _vector(w, Kn, x.dtype)
    _vector(b, Kn, x.dtype)
    v, m = need(var(x, (1,), 0, False, False, True))
    rstd = need(cast(_inverse_std(_f64(v), eps), x.dtype))
    xhat = _mul(_centered(x, m, (M, 1)), rstd.view((M, 1)))
    if w is not None:
        y = need(ternary(ADDCMUL, b, xhat, w)) if b is not None else _mul(xhat, w)
    else:
        y = need(binary(ADD, xhat, b)) if b is not None else xhat
    return y, m, rstd


@composed("norm", "layer_norm_backward")
def layer_norm_backward(g, x, mean_, rstd, w, want_dx, want_dw, want_db):
    """(dx, dw, db) of layer norm (None where not wanted); g, x [M, K], mean, rstd [M]."""
    require(_dense(x, 2) and _dense(g, 2, (x.dtype,)) and g.shape == x.shape and x.numel > 0)
    M, Kn = x.shape
    for v in (mean_, rstd):
        _vector(v, M, x.dtype)
        require(v is not None)
    _vector(w, Kn, x.dtype)
    xhat = _mul(_centered(x, mean_, (M, 1)), rstd.view((M, 1)))
    dx = dw = db = None
    if want_dx:
        gh = g if w is None else _mul(g, w)
        k_mean = need(mean(gh, (1,), True))                 # mean(gh) per row, [M, 1]
        k_xhat = need(mean(_mul(gh, xhat), (1,), True))     # mean(gh * xhat)
        t = need(ternary(ADDCMUL, gh, xhat, k_xhat, p0=-1.0))
        dx = need(binary(SUB, t, k_mean, out=t))
        need(binary(MUL, dx, rstd.view((M, 1)), out=dx))
    if want_dw:
        dw = need(reduce("sum", _mul(g, xhat), (0,), False))
    if want_db:
        db = need(reduce("sum", g, (0,), False))
    return dx, dw, db
