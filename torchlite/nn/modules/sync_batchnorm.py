"""nn.SyncBatchNorm: batch norm whose training statistics are the whole process group's batch
(torch.nn.SyncBatchNorm), over torchlite.distributed (MPI), and convert_sync_batchnorm, which
DistributedDataParallel scripts call on their models.

The steps are PyTorch's top-level functions (torchlite/nn/functional/sync_batch_norm.py).
Forward: each rank's per-channel mean, invstd and count (batch_norm_stats) go to every rank with
one all_gather; batch_norm_gather_stats_with_counts merges them and updates the running
statistics with the unbiased variance of the whole batch; batch_norm_elemt normalises.
Backward: the per-channel sums of dy and dy * (x - mean) (batch_norm_backward_reduce) are
summed with one all_reduce for the input's gradient (batch_norm_backward_elemt); the weight's
and bias's gradients stay per rank, as in PyTorch (DistributedDataParallel averages them with
the other gradients).  Outside a process group of several ranks, or in eval mode, it is
BatchNorm."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..._ops.joining import cat
from ..functional import sync_batch_norm as _steps
from .normalization import _BatchNorm

if TYPE_CHECKING:
    from typing import Any

    from ..._device import device
    from ..._dtype import dtype
    from ..._tensor import Tensor
    from .module import Module

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, *) input with the statistics of the whole process group's batch."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any | None = None,
                 device: device | str | int | None = None, dtype: dtype | None = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input: Tensor) -> Tensor:
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
    def convert_sync_batchnorm(cls, module: Module, process_group: Any | None = None) -> Module:
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


def _all_gather_rows(row, group, world):
    """[world, len(row)]: the 1-d tensor `row` of every rank of the group, in rank order."""
    from ... import distributed as dist
    out = row.new_empty((world, row.shape[0]))
    dist.all_gather_into_tensor(out, row.contiguous(), group=group)
    return out


class _SyncBatchNormFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, group):
        c = input.size(1)
        mean, invstd = _steps.batch_norm_stats(input, eps)
        count = mean.new_full((1,), float(input.numel() // c))
        world = _world_size(group)
        rows = _all_gather_rows(cat([mean, invstd, count]), group, world)
        mean, invstd = _steps.batch_norm_gather_stats_with_counts(
            input, rows[:, :c], rows[:, c:2 * c], running_mean, running_var, momentum, eps,
            rows[:, 2 * c])
        ctx.save_for_backward(input, weight, mean, invstd, rows[:, 2 * c])
        ctx.group = group
        return _steps.batch_norm_elemt(input, weight, bias, mean, invstd, eps)

    @staticmethod
    def backward(ctx, grad_out):
        from ... import distributed as dist
        input, weight, mean, invstd, counts = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad_out = grad_out.contiguous()
        sum_dy, sum_dy_xmu, grad_weight, grad_bias = _steps.batch_norm_backward_reduce(
            grad_out, input, mean, invstd, weight, need_x, need_w and weight is not None,
            need_b and weight is not None)
        grad_input = None
        if need_x:
            c = input.size(1)
            sums = cat([sum_dy, sum_dy_xmu])
            dist.all_reduce(sums, group=ctx.group)
            grad_input = _steps.batch_norm_backward_elemt(grad_out, input, mean, invstd, weight,
                                                     sums[:c], sums[c:], counts)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
