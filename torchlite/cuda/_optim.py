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
