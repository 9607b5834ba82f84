"""PowerSGD gradient compression for DistributedDataParallel (PyTorch's powerSGD_hook, after
Vogels, Karimireddy and Jaggi, NeurIPS 2019).

Each gradient matrix M (n x m, a tensor's first dimension by the rest) is sent as two thin
factors instead of n*m numbers: with Q (m x r) from the last iteration (warm start) or random,

    P = M Q;   all-reduce P;   orthogonalise P's columns;   Q = M^T P;   all-reduce Q;
    M ~ P Q^T / world_size

-- one step of power iteration on the sum of the ranks' gradients, r (n + m) numbers on the
wire.  Vectors (biases) and matrices too small to gain from it (r (n + m) times
min_compression_rate not below n m) are all-reduced as they are.  With error feedback, what
the approximation lost on this rank is added to the next iteration's gradient.  Before
start_powerSGD_iter, buckets are plainly averaged (the first iterations' gradients change
fast).  batched_powerSGD_hook compresses a whole bucket as one square matrix instead.

    state = PowerSGDState(process_group=None, matrix_approximation_rank=2, start_powerSGD_iter=10)
    ddp_model.register_comm_hook(state, powerSGD_hook)

The hooks here run their collectives to completion and return finished futures."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...._dtype import float32
from ... import _collectives as _C
from ... import _backend
from .default_hooks import allreduce_hook

if TYPE_CHECKING:
    from typing import Any

__all__ = ["PowerSGDState", "powerSGD_hook", "batched_powerSGD_hook"]


class PowerSGDState:
    """What PowerSGD keeps between iterations: the options, the iteration count, the error
    feedback and the warm-start factors per bucket, and the random stream that makes the first
    Q (the same on every rank: every rank seeds it alike)."""

    __slots__ = ("process_group", "matrix_approximation_rank", "start_powerSGD_iter",
                 "min_compression_rate", "use_error_feedback", "warm_start",
                 "orthogonalization_epsilon", "rng", "error_dict", "p_memory_dict",
                 "q_memory_dict", "iter", "total_numel_before_compression",
                 "total_numel_after_compression", "compression_stats_logging_frequency",
                 "next_stats_report", "batch_tensors_with_same_shape")

    def __init__(self, process_group: _backend.ProcessGroup | None, matrix_approximation_rank: int = 1,
                 start_powerSGD_iter: int = 1_000, min_compression_rate: float = 2, use_error_feedback: bool = True,
                 warm_start: bool = True, orthogonalization_epsilon: float = 0, random_seed: int = 0,
                 compression_stats_logging_frequency: int = 10_000,
                 batch_tensors_with_same_shape: bool = False) -> None:
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or "
                             "`warm_start` is enabled, because PowerSGD can only be applied "
                             "after the first two iterations in DDP.")
        if matrix_approximation_rank < 1:
            raise ValueError(f"matrix_approximation_rank must be at least 1, got "
                             f"{matrix_approximation_rank}")
        self.process_group = process_group
        self.matrix_approximation_rank = int(matrix_approximation_rank)
        self.start_powerSGD_iter = int(start_powerSGD_iter)
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict, self.p_memory_dict, self.q_memory_dict = {}, {}, {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (to checkpoint it): everything but the process group."""
        return {k: getattr(self, k) for k in self.__slots__ if k != "process_group"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.process_group = None          # the default group; set another after loading
        for k, v in state.items():
            setattr(self, k, v)

    def maybe_increase_iter(self, bucket: Any) -> None:
        """Count an iteration once per backward (at its last bucket)."""
        if bucket.is_last():
            self.iter += 1
        if self.iter == self.start_powerSGD_iter and bucket.is_last():
            import logging
            logging.getLogger(__name__).info("Start to apply PowerSGD after %s iterations.",
                                             self.iter)

    def compression_stats(self) -> tuple[float, int, int]:
        """(compression rate, numel before, numel after) over the compressed iterations."""
        before, after = self.total_numel_before_compression, self.total_numel_after_compression
        return (before / after if after else 0, before, after)


def _orthogonalize(m, epsilon=0):
    """Gram-Schmidt on the columns of m (n x r), in place; epsilon keeps a zero column from
    dividing by zero (PyTorch's orthogonalization_epsilon)."""
    for i in range(m.shape[1]):
        col = m[:, i:i + 1]
        norm = col.norm()
        if epsilon == 0 and float(norm) == 0:
            col.zero_()
        else:
            col.div_(norm + epsilon)
        if i + 1 < m.shape[1]:
            rest = m[:, i + 1:]
            rest.sub_(col * (col * rest).sum(0, keepdim=True))


def _should_compress(n, m, rank, min_compression_rate):
    r = min(n, m, rank)
    return (n + m) * r * min_compression_rate < n * m, r


def _done(value):
    from ....futures import Future
    fut = Future()
    fut.set_result(value)
    return fut


def _all_reduce_sum(t, state):
    _C.all_reduce(t, group=state.process_group)


def _all_reduce_together(tensors, state):
    """The tensors summed over the ranks in one all-reduce of their concatenation."""
    import torchlite
    flat = torchlite.cat([t.reshape(-1) for t in tensors])
    _all_reduce_sum(flat, state)
    out, off = [], 0
    for t in tensors:
        out.append(flat[off:off + t.numel()].view(tuple(t.shape)))
        off += t.numel()
    return out


def _with_error_feedback(state, bucket, buffer):
    """The gradient plus last iteration's loss (error feedback), and a copy of it."""
    import torchlite
    if not state.use_error_feedback:
        return None
    idx = bucket.index()
    err = state.error_dict.get(idx)
    if err is None or err.numel() != buffer.numel():
        err = state.error_dict[idx] = torchlite.zeros(buffer.numel(), dtype=buffer.dtype,
                                                      device=buffer.device)
    buffer.add_(err)
    return buffer.clone()


def _random_q(state, m, r, like):
    """A random m x r start for Q, drawn on the CPU from the state's stream (the same on every
    rank), on like's device."""
    import torchlite
    g = torchlite.Generator().manual_seed(int(state.rng.randint(1_000_000_000)))
    q = torchlite.randn(m, r, generator=g, dtype=float32)
    return q.to(device=like.device, dtype=like.dtype if like.dtype.is_floating_point else float32)


def powerSGD_hook(state: PowerSGDState, bucket: Any) -> Any:
    """DDP communication hook: each gradient matrix of the bucket sent as rank-r factors (one
    power iteration, warm-started), the rest all-reduced as is, all averaged over the ranks;
    error feedback keeps what the compression lost for the next iteration."""
    import torchlite
    if state.iter < state.start_powerSGD_iter:      # the first iterations: plain averages
        state.maybe_increase_iter(bucket)
        return allreduce_hook(state.process_group, bucket)
    buffer, idx = bucket.buffer(), bucket.index()
    world = _backend.get_world_size(state.process_group)
    dtype = buffer.dtype if buffer.dtype.is_floating_point else float32
    before = _with_error_feedback(state, bucket, buffer)
    plain, matrices = [], []
    for g in bucket.gradients():
        if g.ndim <= 1:
            plain.append(g)
            continue
        n, m = g.shape[0], g.numel() // g.shape[0]
        worth, r = _should_compress(n, m, state.matrix_approximation_rank,
                                    state.min_compression_rate)
        (matrices.append((g, n, m, r)) if worth else plain.append(g))
    with torchlite.no_grad():
        if plain:                      # vectors and small matrices: averaged as they are
            flat = torchlite.cat([g.reshape(-1) for g in plain])
            _all_reduce_sum(flat, state)
            flat.div_(world)
            off = 0
            for g in plain:
                g.copy_(flat[off:off + g.numel()].view(tuple(g.shape)))
                off += g.numel()
        if matrices:
            qs = state.q_memory_dict.get(idx) if state.warm_start else None
            if qs is None or [tuple(q.shape) for q in qs] != [(m, r) for _, _, m, r in matrices]:
                qs = [_random_q(state, m, r, buffer).to(dtype) for _, _, m, r in matrices]
                for q in qs:
                    _orthogonalize(q, state.orthogonalization_epsilon)
            mats = [g.reshape(n, m).to(dtype) for g, n, m, _ in matrices]
            ps = _all_reduce_together([mat @ q for mat, q in zip(mats, qs)], state)
            for p in ps:
                _orthogonalize(p, state.orthogonalization_epsilon)
            qs = _all_reduce_together([mat.t() @ p for mat, p in zip(mats, ps)], state)
            for (g, n, m, _), p, q in zip(matrices, ps, qs):
                g.copy_((p @ q.t()).div_(world).view(tuple(g.shape)).to(g.dtype))
            if state.warm_start:
                state.q_memory_dict[idx] = qs
            state.total_numel_before_compression += sum(n * m for _, n, m, _ in matrices)
            state.total_numel_after_compression += sum((n + m) * r for _, n, m, r in matrices)
        if before is not None:
            state.error_dict[idx] = before - buffer
    state.maybe_increase_iter(bucket)
    return _done(buffer)


def batched_powerSGD_hook(state: PowerSGDState, bucket: Any) -> Any:
    """PowerSGD on the whole bucket at once: the flat buffer, padded, as one square matrix
    (side ceil(sqrt(numel))) compressed to rank r -- faster, coarser than powerSGD_hook."""
    import torchlite
    if state.iter < state.start_powerSGD_iter:      # the first iterations: plain averages
        state.maybe_increase_iter(bucket)
        return allreduce_hook(state.process_group, bucket)
    buffer, idx = bucket.buffer(), bucket.index()
    world = _backend.get_world_size(state.process_group)
    total = buffer.numel()
    side = math.ceil(math.sqrt(total))
    r = min(side, state.matrix_approximation_rank)
    before = _with_error_feedback(state, bucket, buffer)
    with torchlite.no_grad():
        padded = torchlite.zeros(side * side, dtype=buffer.dtype, device=buffer.device)
        padded[:total].copy_(buffer)
        mat = padded.view(side, side)
        q = state.q_memory_dict.get(idx) if state.warm_start else None
        if q is None or tuple(q.shape) != (side, r):
            q = _random_q(state, side, r, buffer)
            _orthogonalize(q, state.orthogonalization_epsilon)
        p = mat @ q
        _all_reduce_sum(p, state)
        _orthogonalize(p, state.orthogonalization_epsilon)
        q = mat.t() @ p
        _all_reduce_sum(q, state)
        buffer.copy_((p @ q.t()).div_(world).reshape(-1)[:total])
        if state.warm_start:
            state.q_memory_dict[idx] = q
        state.total_numel_before_compression += total
        state.total_numel_after_compression += 2 * side * r
        if before is not None:
            state.error_dict[idx] = before - buffer
    state.maybe_increase_iter(bucket)
    return _done(buffer)
