"""SparseAdam (PyTorch's torch.optim.SparseAdam): Adam that moves only the entries a sparse
gradient holds ("lazy" Adam, for embedding tables)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .._ops.creation import zeros
from .._ops.sorting import unique
from .._tensor import Tensor
from .optimizer import Optimizer, _to_scalar

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    r"""SparseAdam: Adam restricted to the entries a sparse gradient holds.  Where the
    gradient holds an entry (index i, value g, duplicates summed):

        m_i <- lerp(m_i, g, 1 - beta1);  v_i <- lerp(v_i, g * g, 1 - beta2)
        p_i <- p_i - lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m_i / (sqrt(v_i) + eps)

    and every other entry of p, m and v is left as it is (Adam would decay m and v there and
    keep moving p).  t counts the steps that parameter took.

    What torchlite takes.  PyTorch's SparseAdam takes only gradients of sparse layout
    (nn.Embedding(sparse=True) makes them) and raises on a dense one; torchlite has no
    sparse layout (its Embedding refuses sparse=True), so every gradient is dense and
    step() raises on it with PyTorch's RuntimeError, as PyTorch would on the same tensor.
    SparseAdam therefore accepts parameters only to hold and exchange state: it constructs
    and validates as PyTorch's does (lr > 0, eps > 0, betas in [0, 1), no complex
    parameters), skips parameters whose .grad is None, and its state_dict() and
    load_state_dict() use PyTorch's layout ("step" a Python int, then "exp_avg" and
    "exp_avg_sq"), so a PyTorch SparseAdam checkpoint loads and saves unchanged.  The
    update rule itself is torchlite.optim._functional.sparse_adam, which takes each
    gradient as the (indices, values) pair of a sparse COO tensor (what PyTorch's
    grad._indices() and grad._values() hold).  For a model ported from PyTorch, train the
    embeddings with sparse=False and Adam (note that Adam also updates the rows a batch
    did not touch).
    """

    def __init__(self,
                 params: Iterable[Tensor] | Iterable[dict[str, Any]] | Iterable[tuple[str, Tensor]],
                 lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             "support complex parameters")

    def _update_group(self, group: dict[str, Any]) -> None:
        for p in group["params"]:
            if p.grad is not None:
                # every torchlite gradient is dense (see the class docstring)
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")


def sparse_adam(params: list[Tensor], grads: list[tuple[Tensor, Tensor]], exp_avgs: list[Tensor],
                exp_avg_sqs: list[Tensor], state_steps: list[int], *, eps: float, beta1: float,
                beta2: float, lr: float | Tensor, maximize: bool) -> None:
    """The SparseAdam update (functional form of SparseAdam.step, PyTorch's
    torch.optim._functional.sparse_adam).  Each gradient is a sparse COO tensor given as
    its (indices, values) pair: indices an integer tensor of shape (sparse dims, nnz), values
    of shape (nnz, *the parameter's remaining dims); repeated indices are summed.
    state_steps are the steps taken, counting this one (Python ints)."""
    lr = _to_scalar(lr)
    for param, (indices, values), exp_avg, exp_avg_sq, step in zip(
            params, grads, exp_avgs, exp_avg_sqs, state_steps):
        if maximize:
            values = -values
        index, values = _coalesce(indices, values, param.shape)
        if values.numel() == 0:
            continue
        # old <- b * old + (1 - b) * new, as old += (1 - b) * (new - old) on the held entries
        old_exp_avg = exp_avg[index]
        exp_avg_update = values.sub(old_exp_avg).mul_(1 - beta1)
        exp_avg.index_put_(index, exp_avg_update, accumulate=True)
        old_exp_avg_sq = exp_avg_sq[index]
        exp_avg_sq_update = values.pow(2).sub_(old_exp_avg_sq).mul_(1 - beta2)
        exp_avg_sq.index_put_(index, exp_avg_sq_update, accumulate=True)
        numer = exp_avg_update.add_(old_exp_avg)
        denom = exp_avg_sq_update.add_(old_exp_avg_sq).sqrt_().add_(eps)
        step_size = lr * (1 - beta2 ** step) ** 0.5 / (1 - beta1 ** step)
        param.index_put_(index, numer.div_(denom).mul_(-step_size), accumulate=True)


def _coalesce(indices, values, shape):
    """The COO pair with unique indices (values at repeated ones summed), in ascending order
    as PyTorch's coalesce() leaves them; returns (tuple of index tensors, values)."""
    sparse_dims = indices.shape[0]
    if indices.shape[1] == 0:
        return tuple(indices), values
    linear = zeros(indices.shape[1], dtype=indices.dtype)
    for d in range(sparse_dims):
        linear = linear * shape[d] + indices[d]
    unique_linear, inverse = unique(linear, sorted=True, return_inverse=True)
    summed = zeros((unique_linear.numel(),) + tuple(values.shape[1:]), dtype=values.dtype,
                   device=values.device)
    values = summed.index_add_(0, inverse, values)
    rows = []
    rest = unique_linear
    for d in reversed(range(sparse_dims)):
        rows.append(rest % shape[d])
        rest = rest // shape[d]
    return tuple(reversed(rows)), values
