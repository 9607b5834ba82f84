"""nn.SyncBatchNorm: batch norm whose training statistics are the whole process group's batch
(torch.nn.SyncBatchNorm), over torchlite.distributed (MPI), and convert_sync_batchnorm, which
DistributedDataParallel scripts call on their models.

Forward: each rank's per-channel count, sum and sum of squares (in float64) are summed with one
all_reduce; mean and variance follow, the running statistics update with the unbiased variance
of the whole batch.  Backward: the per-channel sums of dy and dy * (x - mean) are summed with
one all_reduce for the input's gradient; the weight's and bias's gradients stay per rank, as in
PyTorch (DistributedDataParallel averages them with the other gradients).  Outside a process
group of several ranks, or in eval mode, it is BatchNorm."""
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) input with the statistics of the whole process group's batch."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        factor, bn_training, running_mean, running_var = self._step()
        world = _world_size(self.process_group) if bn_training and self.training else 1
        if world <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, bn_training,
                                factor, self.eps)
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean, running_var,
                                            self.eps, factor, self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*D layer in it replaced by a SyncBatchNorm holding the
        same parameters, buffers and mode (module itself when it is such a layer)."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


def _world_size(group):
    from ... import distributed as dist
    if not (dist.is_available() and dist.is_initialized()):
        return 1
    return dist.get_world_size(group)


def _channel_sums(*tensors):
    """Per-channel sums over every dim but 1 of each (N, C, *) tensor, in float64."""
    dims = [d for d in range(tensors[0].dim()) if d != 1]
    return [t.double().sum(dims) for t in tensors]


def _all_reduce_rows(rows, group):
    """The element-wise sums over the group of the 1-d float64 tensors `rows` (one call)."""
    from ... import distributed as dist
    from ..._ops.joining import cat
    packed = cat(rows)
    dist.all_reduce(packed, group=group)
    return packed.split([r.shape[0] for r in rows])


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group):
        c = input.size(1)
        count = input.numel() // c
        local_count = input.new_full((c,), float(count)).double()
        s, ss = _channel_sums(input, input * input)
        total, s, ss = _all_reduce_rows([local_count, s, ss], group)
        n = total[0].item()
        mean = s / n
        var = (ss / n - mean * mean).clamp(min=0)
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var * (n / (n - 1)) if n > 1 else var
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        shape = [1, c] + [1] * (input.dim() - 2)
        invstd = (var + eps).rsqrt()
        xhat = (input.double() - mean.reshape(shape)) * invstd.reshape(shape)
        y = xhat
        if weight is not None:
            y = y * weight.double().reshape(shape)
        if bias is not None:
            y = y + bias.double().reshape(shape)
        ctx.save_for_backward(input, weight, mean, invstd)
        ctx.n, ctx.group = n, group
        return y.to(input.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        input, weight, mean, invstd = ctx.saved_tensors
        c = input.size(1)
        shape = [1, c] + [1] * (input.dim() - 2)
        g = grad_out.double()
        xmu = input.double() - mean.reshape(shape)
        sum_dy, sum_dy_xmu = _channel_sums(g, g * xmu)             # this rank's
        grad_weight = (sum_dy_xmu * invstd).to(weight.dtype) if weight is not None else None
        grad_bias = sum_dy.to(weight.dtype) if weight is not None else None
        grad_input = None
        if ctx.needs_input_grad[0]:
            sum_dy, sum_dy_xmu = _all_reduce_rows([sum_dy, sum_dy_xmu], ctx.group)
            w = weight.double().reshape(shape) if weight is not None else 1.0
            inv = invstd.reshape(shape)
            grad_input = (w * inv * (g - (sum_dy / ctx.n).reshape(shape)
                                     - xmu * (inv * inv) * (sum_dy_xmu / ctx.n).reshape(shape))).to(input.dtype)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
