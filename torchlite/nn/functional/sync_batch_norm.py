"""The steps of a batch norm whose statistics span processes, as PyTorch's top-level functions
(torch.batch_norm_stats, batch_norm_gather_stats(_with_counts), batch_norm_elemt,
batch_norm_backward_reduce, batch_norm_backward_elemt, batch_norm_update_stats).

nn.SyncBatchNorm is these steps with a collective between them: each process computes its
per-channel statistics (batch_norm_stats), the processes exchange them, batch_norm_gather_stats
merges them (Chan's parallel variance: each process's biased variance is 1 / invstd^2 - eps)
and updates the running statistics, batch_norm_elemt normalises; backward mirrors it with
batch_norm_backward_reduce, an all-reduce of its two sums and batch_norm_backward_elemt.

The per-channel sums run in the fused kernels of torchlite/_core/norm.pyx (float64
accumulation); the small [world, C] merges are Tensor ops in float64.  Statistics come back in
the input's dtype, float32 for a float16/bfloat16 input (PyTorch's accumulate type).  Like
PyTorch's, these functions have no backward of their own except batch_norm_elemt, a
composition of differentiable ops (in PyTorch they run on CUDA only; here on every device)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _dtype as D
from ..._tensor import _wrap
from ..._dispatch import norm as _NK
from ..._ops._kit import tensor_arg
from ...autograd.graph import needs_grad, record_not_differentiable
from ...autograd.grad_mode import no_grad as _no_grad
from .normalization import _float_input, _is_half, _update_running
from .normalization_grad import dense as _dense

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["batch_norm_stats", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_elemt", "batch_norm_backward_reduce", "batch_norm_backward_elemt",
           "batch_norm_update_stats"]


def _as_ncs(input, op):
    """input (N, C, *) as a contiguous float32/float64 array [N, C, S] (half inputs widened)."""
    _float_input(input, op)
    if input.ndim < 2:
        raise RuntimeError(f"{op}: expected an input of at least 2 dims (N, C, ...), got "
                           f"shape {list(input.shape)}")
    x = input.detach().float() if _is_half(input) else input.detach()
    s = 1
    for d in input.shape[2:]:
        s *= d
    return _dense(x, (input.shape[0], input.shape[1], s))


def _stat_dtype(input):
    return D.float32 if _is_half(input) else input.dtype


def _channel_vector(t, name, channels, op):
    tensor_arg(t, op, name)
    if t.numel() != channels:
        raise RuntimeError(f"{op}: {name} should have {channels} elements (one per channel), "
                           f"got shape {list(t.shape)}")
    return t.reshape(channels)


def _channel_shape(input):
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _no_backward(op, inputs, outputs):
    if needs_grad(*inputs):
        record_not_differentiable(op, inputs, list(outputs))
    return outputs


def batch_norm_stats(input: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """(mean, invstd) of each channel (dim 1) over every other dim: invstd = 1 / sqrt(biased
    variance + eps)."""
    x3 = _as_ncs(input, "batch_norm_stats")
    mean, var = _NK.batch_norm_stats(x3)
    mean, var = _wrap(mean), _wrap(var)
    dt = _stat_dtype(input)
    return _no_backward("batch_norm_stats", (input,),
                        (mean.to(dt), (var + eps).rsqrt().to(dt)))


def batch_norm_update_stats(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                            momentum: float) -> tuple[Tensor, Tensor]:
    """(mean, biased variance) of each channel of input; running_mean/running_var (either may be
    None) are updated in place with momentum, the variance unbiased, as batch_norm's training
    step updates them."""
    x3 = _as_ncs(input, "batch_norm_update_stats")
    if x3.shape[0] * x3.shape[2] == 0:
        raise RuntimeError("input tensor must have at least one element")
    mean, var = _NK.batch_norm_stats(x3)
    mean, var = _wrap(mean), _wrap(var)
    n = x3.shape[0] * x3.shape[2]
    with _no_grad():
        _update_running(running_mean, running_var, mean, var, n, momentum)
    dt = input.dtype               # (PyTorch's CPU kernel: the input's dtype, half included)
    return _no_backward("batch_norm_update_stats", (input,), (mean.to(dt), var.to(dt)))


def batch_norm_gather_stats_with_counts(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                                        running_var: Tensor | None, momentum: float, eps: float,
                                        counts: Tensor) -> tuple[Tensor, Tensor]:
    """Merge per-process statistics: mean and invstd [world, C] (batch_norm_stats of each
    process), counts [world] (elements per channel in each).  Returns the whole group's
    (mean, invstd) [C]; running_mean/running_var (if given) are updated in place with momentum,
    the variance unbiased.  Processes with a count of 0 are left out."""
    op = "batch_norm_gather_stats_with_counts"
    for name, t in (("input", input), ("mean", mean), ("invstd", invstd), ("counts", counts)):
        tensor_arg(t, op, name)
    if mean.ndim != 2 or tuple(invstd.shape) != tuple(mean.shape):
        raise RuntimeError(f"{op}: mean and invstd must both be [world_size, channels], got "
                           f"{list(mean.shape)} and {list(invstd.shape)}")
    if counts.numel() != mean.shape[0]:
        raise RuntimeError(f"{op}: counts should have one element per row of mean "
                           f"({mean.shape[0]}), got shape {list(counts.shape)}")
    with _no_grad():
        c = counts.detach().double().reshape(-1, 1)
        present = c > 0                 # a process with no elements adds nothing (its NaNs)
        m = mean.detach().double().where(present, 0.0)
        var_n = ((invstd.detach().double() ** -2 - eps) * c).where(present, 0.0)
        total = c.sum(0)
        gmean = (m * c).sum(0) / total.clamp(min=1)
        m2 = (var_n + (c * (m - gmean) ** 2).where(present, 0.0)).sum(0)
        var = m2 / total.clamp(min=1)
        n = float(total.max()) if total.numel() else 0.0
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(gmean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = m2 / (total - 1) if n > 1 else var * float("inf")
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    dt = D.float32 if _is_half(mean) else mean.dtype
    return _no_backward(op, (mean, invstd),
                        (gmean.to(dt), (var + eps).rsqrt().to(dt)))


def batch_norm_gather_stats(input: Tensor, mean: Tensor, invstd: Tensor, running_mean: Tensor | None,
                            running_var: Tensor | None, momentum: float, eps: float,
                            count: int) -> tuple[Tensor, Tensor]:
    """batch_norm_gather_stats_with_counts with the same element count (an int) in every
    process."""
    counts = mean.new_full((mean.shape[0] if mean.ndim else 0,), float(count))
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_elemt(input: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor,
                     eps: float) -> Tensor:
    """(input - mean) * invstd * weight + bias per channel (weight, bias may be None; eps is
    unused: invstd already holds it).  Differentiable in every tensor argument."""
    op = "batch_norm_elemt"
    _float_input(input, op)
    c = input.shape[1] if input.ndim > 1 else 0
    shape = _channel_shape(input)
    scale = _channel_vector(invstd, "invstd", c, op)
    if weight is not None:
        scale = scale * _channel_vector(weight, "weight", c, op)
    shift = -_channel_vector(mean, "mean", c, op) * scale
    if bias is not None:
        shift = shift + _channel_vector(bias, "bias", c, op)
    x = input.float() if _is_half(input) else input      # half inputs in float32, cast back
    y = x * scale.reshape(shape).to(x.dtype) + shift.reshape(shape).to(x.dtype)
    return y.to(input.dtype)


def batch_norm_backward_reduce(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor, weight: Tensor | None,
                               input_g: bool, weight_g: bool,
                               bias_g: bool) -> tuple[Tensor | None, Tensor | None, Tensor | None, Tensor | None]:
    """The per-channel sums backward needs: (sum_dy, sum_dy_xmu, grad_weight, grad_bias) with
    sum_dy = sum(grad_out), sum_dy_xmu = sum(grad_out * (input - mean)) (None unless input_g),
    grad_weight = sum_dy_xmu * invstd (None unless weight_g), grad_bias = sum_dy (None unless
    bias_g)."""
    op = "batch_norm_backward_reduce"
    tensor_arg(grad_out, op, "grad_out")
    x3 = _as_ncs(input, op)
    g3 = _as_ncs(grad_out, op)
    if tuple(g3.shape) != tuple(x3.shape):
        raise RuntimeError(f"{op}: grad_out's shape {list(grad_out.shape)} differs from "
                           f"input's {list(input.shape)}")
    c = x3.shape[1]
    m64 = _channel_vector(mean, "mean", c, op).detach().double().contiguous()
    sum_dy, sum_dy_xmu = _NK.batch_norm_grad_sums(g3, x3, m64._data)
    sum_dy, sum_dy_xmu = _wrap(sum_dy), _wrap(sum_dy_xmu)
    dt = mean.dtype
    pdt = weight.dtype if weight is not None else dt
    inv = _channel_vector(invstd, "invstd", c, op).detach().double()
    outs = (sum_dy.to(dt) if input_g else None,
            sum_dy_xmu.to(dt) if input_g else None,
            (sum_dy_xmu * inv).to(pdt) if weight_g else None,
            sum_dy.to(pdt) if bias_g else None)
    present = [t for t in outs if t is not None]
    _no_backward(op, (grad_out, input, mean, invstd), present)
    return outs


def batch_norm_backward_elemt(grad_out: Tensor, input: Tensor, mean: Tensor, invstd: Tensor, weight: Tensor | None,
                              sum_dy: Tensor, sum_dy_xmu: Tensor, count: Tensor) -> Tensor:
    """The input gradient of batch norm with statistics over the whole group:
    (grad_out - sum_dy / n - (input - mean) * invstd^2 * sum_dy_xmu / n) * invstd * weight, with
    n = count.sum() (count: the elements per channel in each process)."""
    op = "batch_norm_backward_elemt"
    _float_input(input, op)
    tensor_arg(grad_out, op, "grad_out")
    tensor_arg(count, op, "count")
    c = input.shape[1] if input.ndim > 1 else 0
    shape = _channel_shape(input)
    with _no_grad():
        n = count.detach().double().sum()
        inv = _channel_vector(invstd, "invstd", c, op).detach().double()
        mean_dy = _channel_vector(sum_dy, "sum_dy", c, op).detach().double() / n
        mean_dy_xmu = _channel_vector(sum_dy_xmu, "sum_dy_xmu", c, op).detach().double() / n
        scale = inv if weight is None else inv * _channel_vector(weight, "weight", c, op).detach().double()
        m = _channel_vector(mean, "mean", c, op).detach().double()
        # grad_in = g * a + x * b + k per channel: a = scale, b = -scale * invstd^2 * mean_dy_xmu,
        # k = -scale * mean_dy - m * b
        b = -scale * inv * inv * mean_dy_xmu
        k = -scale * mean_dy - m * b
        wdt = input.dtype
        g = grad_out.detach()
        out = (g * scale.reshape(shape).to(wdt) + input.detach() * b.reshape(shape).to(wdt)
               + k.reshape(shape).to(wdt))
    return _no_backward(op, (grad_out, input, mean, invstd, sum_dy, sum_dy_xmu), (out,))[0]
