"""Fused optimizer steps on the GPU: one tl_sgd / tl_adam launch (cuda_kernels/optim.cu) per
parameter instead of the ten or so elementwise launches of the Tensor-op update.  They are
the CUDA versions of torchlite/_core/optim.pyx's sgd_step and adam_step (the same signature,
the same per-element math: cuda_kernels/tl_optim.cuh), reached through torchlite._dispatch
by torchlite.optim for parameters whose gradient and state are contiguous tensors of the
parameter's dtype, shape and device; anything else returns False and takes the Tensor-op
update."""
import struct

from . import _kernels as K, _launch
from ._array import CudaArray
from ._registry import native

_THREADS = 256


def _eligible(param, *others):
    if not isinstance(param, CudaArray) or param.dtype not in K.FLOATS or not param.is_contiguous():
        return False
    return all(o is None or (isinstance(o, CudaArray) and o.device_index == param.device_index
                             and o.dtype == param.dtype and o.shape == param.shape
                             and o.is_contiguous()) for o in others)


@native("optim", "sgd_step", kernel=True)
def sgd_step(param, grad, buf, *, lr, weight_decay, momentum, dampening, nesterov, maximize,
             first_step):
    """One SGD step of arrays param (updated), grad and buf (the momentum buffer, written;
    None when momentum is 0).  False, doing nothing, when the arrays do not qualify."""
    if not _eligible(param, grad, buf) or (momentum != 0 and buf is None):
        return False
    n = param.numel
    if n:
        args = struct.pack("<4d4i", lr, weight_decay, momentum, dampening, int(nesterov),
                           int(maximize), int(first_step), 0)
        k = _launch.kernel("optim.cu", K.optimizer_kernel("sgd", param.dtype), param.device_index)
        _launch.launch(k, _launch.grid_for(n, param.device_index, _THREADS), _THREADS,
                       [_launch.ptr_of(param), _launch.ptr_of(grad), _launch.ptr_of(buf if momentum != 0 else None),
                        _launch.i64(n), _launch.struct(args)])
    return True


@native("optim", "sgd_steps", kernel=True)
def sgd_steps(params, grads, bufs, first_steps, *, lr, weight_decay, momentum, dampening,
              nesterov, maximize):
    """sgd_step of every parameter, or of none (False) unless all qualify: by tl_sgd_multi,
    one launch per dtype for up to K.MULTI_MAX parameters (blockIdx.y the parameter)."""
    if not params or len(grads) != len(params) or len(bufs) != len(params) \
            or len(first_steps) != len(params):
        return False
    device = params[0].device_index if isinstance(params[0], CudaArray) else None
    for p, g, b in zip(params, grads, bufs):
        if not _eligible(p, g, b) or p.device_index != device or (momentum != 0 and b is None):
            return False
    head = struct.pack("<4d4i", lr, weight_decay, momentum, dampening, int(nesterov),
                       int(maximize), 0, 0)
    by_dtype = {}
    for i, p in enumerate(params):
        if p.numel:
            by_dtype.setdefault(p.dtype, []).append(i)
    for dtype, idx in by_dtype.items():
        k = _launch.kernel("optim.cu", K.optimizer_kernel("sgd_multi", dtype), device)
        for c in range(0, len(idx), K.MULTI_MAX):
            chunk = idx[c:c + K.MULTI_MAX]
            pad = [0] * (K.MULTI_MAX - len(chunk))
            tensors = struct.pack(
                f"<{K.MULTI_MAX}Q{K.MULTI_MAX}Q{K.MULTI_MAX}Q{K.MULTI_MAX}q{K.MULTI_MAX}i",
                *[params[i].data_ptr() for i in chunk], *pad,
                *[grads[i].data_ptr() for i in chunk], *pad,
                *[bufs[i].data_ptr() if momentum != 0 else 0 for i in chunk], *pad,
                *[params[i].numel for i in chunk], *pad,
                *[int(first_steps[i]) for i in chunk], *pad)
            longest = max(params[i].numel for i in chunk)
            _launch.launch(k, (_launch.grid_for(longest, device, _THREADS), len(chunk)), _THREADS,
                           [_launch.struct(tensors), _launch.struct(head)])
    return True


@native("optim", "adam_step", kernel=True)
def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, *, beta1, beta2, lr,
              weight_decay, eps, step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled):
    """One Adam/AdamW step of arrays param, grad and the moment buffers (max_exp_avg_sq None
    unless amsgrad).  False, doing nothing, when the arrays do not qualify."""
    if not _eligible(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq) \
            or (amsgrad and max_exp_avg_sq is None):
        return False
    n = param.numel
    if n:
        args = struct.pack("<7d4i", beta1, beta2, lr, weight_decay, eps, step_size,
                           bias_correction2_sqrt, int(amsgrad), int(maximize), int(decoupled), 0)
        k = _launch.kernel("optim.cu", K.optimizer_kernel("adam", param.dtype), param.device_index)
        _launch.launch(k, _launch.grid_for(n, param.device_index, _THREADS), _THREADS,
                       [_launch.ptr_of(param), _launch.ptr_of(grad), _launch.ptr_of(exp_avg),
                        _launch.ptr_of(exp_avg_sq), _launch.ptr_of(max_exp_avg_sq if amsgrad else None),
                        _launch.i64(n),
                        _launch.struct(args)])
    return True
