"""DistributedDataParallel: data-parallel training over torchlite.distributed (MPI).

Each rank holds a full replica of the module and runs forward and backward on its own part of
the batch; DDP keeps the replicas equal by averaging the gradients across ranks.

How (the design in docs/distributed.md):

* At construction the parameters and buffers of rank 0 are broadcast to every rank (after
  checking that every rank has the same parameter shapes and dtypes).
* The parameters that require grad are put in buckets: in reverse registration order (the
  order backward tends to produce their gradients), one dtype per bucket, the first bucket
  up to 1 MiB and the others up to bucket_cap_mb.  Each bucket owns one flat buffer.
* A parameter whose gradient is large (at least 1 MiB) is a bucket of its own that has no
  buffer: its .grad is all-reduced in place, as PyTorch's gradient_as_bucket_view would,
  without the copies into and out of a bucket (the message is long enough that a collective
  of its own costs nothing next to them).  Without a communication hook only: a hook sees
  PyTorch's buckets.
* Every parameter gets a post-accumulate-grad hook.  When backward has written a
  parameter's .grad, the hook copies it into its bucket's buffer (not for a bucket of its
  own); when the last gradient of a bucket is in, the bucket's all-reduce starts,
  non-blocking (MPI_Iallreduce), while backward goes on with the layers below (the last
  bucket, with nothing left to overlap, uses the blocking MPI_Allreduce).  Buckets start in
  index order on every rank (MPI needs the same order of collectives everywhere).
* After the first synchronised iteration the buckets are re-formed once in the order the
  gradients actually became ready (rank 0's order): torchlite's engine accumulates a layer's
  weight gradient as soon as it is computed but the biases only at the end of backward.
* torchlite's autograd engine has no end-of-backward callback, so the hook that completes
  the last bucket waits for all of them and writes the averaged gradients back into .grad
  before it returns: when loss.backward() returns, the gradients are averaged.
* find_unused_parameters=True: after forward, the autograd graph of the outputs is walked;
  the parameters it does not reach are marked ready at once (their current gradient, or
  zeros).  A parameter that got no gradient on any rank keeps its .grad (None stays None).
* Uneven inputs: DDP is a Joinable (torchlite.distributed.algorithms.join).  Inside
  `with model.join():` each forward first notifies the join context, then all ranks agree
  whether this iteration averages gradients (an all-reduce: a rank in no_sync() counts 0) and
  broadcast the buffers from the highest rank still running; a rank that has run out repeats
  those collectives and the bucket all-reduces with zero gradients (_JoinHook.main_hook), so
  the average divides by the initial world size (or, with divide_by_initial_world_size=False,
  by the ranks still running); at the end the model of a last joiner is broadcast to all.
  The buckets are not re-formed while a join context is open (both sides keep the same ones).
"""
from __future__ import annotations

import contextlib
import weakref
from typing import TYPE_CHECKING

from ..modules.module import Module
from ...distributed.algorithms.join import Join, JoinHook, Joinable, _JoinConfig

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any, NoReturn

    from ..._device import device

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024
_OWN_BUCKET_BYTES = 1024 * 1024      # a gradient this large is all-reduced in place, on its own


class _Bucket:
    """Gradients reduced together: parameter indices, their offsets in `flat`, and the
    number still missing in this iteration."""

    def __init__(self, index, dtype):
        self.index = index
        self.dtype = dtype
        self.params = []          # parameter indices
        self.offsets = []
        self.numel = 0
        self.flat = None
        self.pending = 0
        self.work = None
        self.own = False          # one large parameter, reduced in its .grad (no flat buffer)
        self.buf = None           # what this iteration reduces: flat, or the .grad itself


class DistributedDataParallel(Module, Joinable):
    """Wrap `module` for data-parallel training: forward runs the module on this rank's
    inputs, and backward leaves on every parameter the gradient averaged over the ranks.

    module: the model (CPU parameters); it is `self.module`, so state_dict keys start with
    'module.'.  device_ids/output_device: None for CPU modules (no GPU path yet).
    broadcast_buffers: copy rank 0's buffers (e.g. BatchNorm's running statistics) to every
    rank before each forward.  process_group: the group to average over (the default one
    when None).  bucket_cap_mb: bucket size (25 MiB).  find_unused_parameters: tolerate
    parameters that get no gradient in an iteration.  gradient_as_bucket_view: make each
    .grad a view into its bucket's buffer (saves a copy and memory).  static_graph and dim
    are accepted for compatibility (dim must be 0)."""

    def __init__(self, module: Module, device_ids: Sequence[int | device] | None = None,
                 output_device: int | device | None = None, dim: int = 0, broadcast_buffers: bool = True,
                 process_group: Any | None = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False) -> None:
        super().__init__()
        from ... import distributed as dist
        from ...distributed import _backend
        if not dist.is_initialized():
            raise ValueError("DistributedDataParallel: the default process group has not been "
                             "initialized; call torchlite.distributed.init_process_group() first")
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, got "
                            f"{type(module).__name__}")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        devices = {p.device.type for p in module.parameters()} | {b.device.type for b in module.buffers()}
        if devices - {"cpu"}:
            raise NotImplementedError(f"DistributedDataParallel: the module has tensors on {sorted(devices)}; "
                                      f"only CPU modules are supported (no GPU path yet)")
        if device_ids or output_device is not None:
            raise ValueError(f"DistributedDataParallel device_ids and output_device only apply to GPU "
                             f"modules; for a CPU module pass None (got device_ids={device_ids}, "
                             f"output_device={output_device})")
        if dim != 0:
            raise NotImplementedError("DistributedDataParallel: only dim=0 is supported")
        pg = _backend.resolve(process_group)
        if pg is None:
            raise ValueError("DistributedDataParallel: this rank is not a member of process_group")
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = pg                 # the default group when None, as PyTorch
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        cap = 25.0 if bucket_cap_mb is None else float(bucket_cap_mb)
        if cap <= 0:
            raise ValueError(f"bucket_cap_mb must be positive, got {bucket_cap_mb}")
        self.bucket_bytes_cap = int(cap * 1024 * 1024)
        object.__setattr__(self, "_pg", pg)
        object.__setattr__(self, "_params", params)
        names = {id(p): n for n, p in module.named_parameters()}
        object.__setattr__(self, "_param_names", [names.get(id(p), "?") for p in params])

        self._verify_same_params_across_ranks()
        self._sync_module_states()
        self._build_buckets()
        self._reset_iteration(False)
        object.__setattr__(self, "_ready_order", [])
        object.__setattr__(self, "_buckets_rebuilt", False)
        object.__setattr__(self, "_comm_hook", None)
        object.__setattr__(self, "_comm_state", None)
        object.__setattr__(self, "_join_config", _JoinConfig())
        object.__setattr__(self, "_divide_by_initial_world_size", True)
        object.__setattr__(self, "_grad_divisor", None)
        ref = weakref.ref(self)
        object.__setattr__(self, "_hook_handles", [
            p.register_post_accumulate_grad_hook(_make_hook(ref, i)) for i, p in enumerate(params)])

    # ---- construction ---------------------------------------------------------------------------
    def _verify_same_params_across_ranks(self):
        """Every rank must wrap the same architecture: compare shapes and dtypes of all
        parameters (a mismatch raises here instead of corrupting or hanging later)."""
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in self.module.named_parameters()]
        everyone = self._pg.comm.allgather(mine)
        first = everyone[0]
        for r, theirs in enumerate(everyone):
            if theirs != first:
                k = next((k for k, (a, b) in enumerate(zip(first, theirs)) if a != b), min(len(first), len(theirs)))
                got = theirs[k] if k < len(theirs) else "no parameter"
                want = first[k] if k < len(first) else "no parameter"
                raise RuntimeError(f"DistributedDataParallel: rank {self._pg.ranks[r]} has different "
                                   f"parameters than rank {self._pg.ranks[0]}: parameter {k} is {got} "
                                   f"there and {want} on rank {self._pg.ranks[0]} (every rank must wrap "
                                   f"the same model)")

    def _sync_module_states(self):
        """Rank 0's parameters and buffers, to every rank."""
        tensors = [p for p in self.module.parameters()] + [b for b in self.module.buffers()]
        _broadcast_coalesced(tensors, self._pg)

    def _build_buckets(self, order=None):
        """Buckets over the parameters in `order` (indices; reverse registration order by
        default).  Gradients already held in old bucket views move to the new ones."""
        old_views = None
        if getattr(self, "_buckets", None) is not None and self.gradient_as_bucket_view:
            old_views = [self._view(i) for i in range(len(self._params))]
        buckets, open_by_dtype = [], {}
        own_ok = not self.gradient_as_bucket_view and getattr(self, "_comm_hook", None) is None
        for i in (reversed(range(len(self._params))) if order is None else order):
            p = self._params[i]
            size = p.numel() * p.element_size()
            if own_ok and size >= _OWN_BUCKET_BYTES:
                b = _Bucket(len(buckets), p.dtype)
                b.own = True
                b.params, b.offsets, b.numel = [i], [0], p.numel()
                buckets.append(b)
                continue
            b = open_by_dtype.get(p.dtype)
            cap = _FIRST_BUCKET_BYTES if not buckets or b is buckets[0] else self.bucket_bytes_cap
            cap = min(cap, self.bucket_bytes_cap)
            if b is not None and b.params and (b.numel * p.element_size() + size) > cap:
                b = None
            if b is None:
                b = _Bucket(len(buckets), p.dtype)
                buckets.append(b)
                open_by_dtype[p.dtype] = b
            b.params.append(i)
            b.offsets.append(b.numel)
            b.numel += p.numel()
        import torchlite
        where = [None] * len(self._params)
        for b in buckets:
            if not b.own:
                b.flat = torchlite.zeros(b.numel, dtype=b.dtype)
            for i, off in zip(b.params, b.offsets):
                where[i] = (b, off)
        object.__setattr__(self, "_buckets", buckets)
        object.__setattr__(self, "_where", where)
        if old_views is not None:
            import torchlite
            with torchlite.no_grad():
                for i, p in enumerate(self._params):
                    if p.grad is not None and p.grad.data_ptr() == old_views[i].data_ptr():
                        view = self._view(i)
                        view.copy_(p.grad)
                        p.grad = view

    def _rebuild_buckets(self):
        """Once, after the first synchronised backward: re-form the buckets in the order the
        gradients became ready (rank 0's order, so every rank agrees), so that each bucket
        fills, and starts its all-reduce, as early in backward as it can."""
        from ... import distributed as dist
        order = [list(self._ready_order)]
        src = self._pg.ranks[0]
        dist.broadcast_object_list(order, src=src, group=None if self._pg is dist.group.WORLD else self._pg)
        order = order[0]
        if sorted(order) != list(range(len(self._params))):
            return      # an incomplete record (should not happen): keep the buckets
        self._build_buckets(order)

    def _view(self, i):
        b, off = self._where[i]
        p = self._params[i]
        return _flat(b)[off:off + p.numel()].view(tuple(p.shape))

    # ---- one iteration --------------------------------------------------------------------------
    def _reset_iteration(self, sync):
        if not getattr(self, "_buckets_rebuilt", True) and len(self._ready_order) != len(self._params):
            self._ready_order.clear()      # only a complete synchronised iteration counts
        object.__setattr__(self, "_sync", sync)
        object.__setattr__(self, "_ready", [False] * len(self._params))
        object.__setattr__(self, "_used", [False] * len(self._params))
        object.__setattr__(self, "_next_bucket", 0)
        object.__setattr__(self, "_started", False)
        # the gradients that exist before this iteration's backward (kept as the same tensors,
        # which the averages are copied into); the others are made during it
        object.__setattr__(self, "_had_grad", [p.grad is not None for p in self._params])
        for b in self._buckets:
            b.pending = len(b.params)
            b.work = None
            b.buf = b.flat

    def forward(self, *inputs, **kwargs) -> Any:
        """Run the module; when grad is enabled and not in no_sync(), the next backward
        averages the gradients across ranks."""
        from ... import autograd
        if self._sync and self._started:
            missing = [self._param_names[i] for i, r in enumerate(self._ready) if not r]
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior "
                "iteration before starting a new one: some parameters received no gradient, so "
                "their buckets were never all-reduced.  Pass find_unused_parameters=True if the "
                "forward does not use every parameter, and make sure every output takes part in "
                f"the loss.  Parameters without a gradient on rank {self._pg.ranks[self._pg.rank()]}: "
                f"{', '.join(missing)}")
        sync = autograd.is_grad_enabled() and self.require_backward_grad_sync
        joining = self._join_config.enable
        divisor = None
        if joining:
            running = Join.notify_join_context(self)
            sync = self._agree_on_sync(sync)
            self._broadcast_buffers_from_running(True)
            if running is not None and not self._divide_by_initial_world_size:
                divisor = int(running.result()[0].item())
        elif self.broadcast_buffers and self.require_forward_param_sync and self._pg.size() > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _broadcast_coalesced(buffers, self._pg)
        object.__setattr__(self, "_grad_divisor", divisor)
        for b in self._buckets:       # a forward without backward may leave a bucket in flight
            if b.work is not None:
                b.work.wait()
        if not self._buckets_rebuilt and not joining \
                and len(self._ready_order) == len(self._params):
            self._rebuild_buckets()
            self._buckets_rebuilt = True
        self.require_forward_param_sync = sync
        if self._pg.size() == 1:
            sync = False              # one rank: its gradients are already the average
        self._reset_iteration(sync)
        out = self.module(*inputs, **kwargs)
        if sync and self.find_unused_parameters:
            reached = _parameters_reached(out)
            for i, p in enumerate(self._params):
                if id(p) not in reached:
                    self._mark_ready(i, used=False)
        return out

    def register_comm_hook(self, state: Any, hook: Callable[..., Any]) -> None:
        """Reduce each bucket with hook(state, bucket) instead of DDP's all-reduce-and-average:
        bucket is a torchlite.distributed.GradBucket, and the hook returns a
        torchlite.futures.Future of the reduced flat tensor (or a one-element list of it),
        which becomes the bucket's gradients.  The hook does its own averaging.  PyTorch's
        hooks are in torchlite.distributed.algorithms.ddp_comm_hooks.default_hooks; at most
        one hook, registered before the first backward."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be "
                               "called once.")
        if self._started or self._buckets_rebuilt or self._ready_order:
            raise RuntimeError("register_comm_hook must be called before the first backward")
        object.__setattr__(self, "_comm_hook", hook)
        object.__setattr__(self, "_comm_state", state)
        if any(b.own for b in self._buckets):
            self._build_buckets()         # the hook sees PyTorch's buckets, each with a buffer
            for b in self._buckets:
                b.pending, b.buf = len(b.params), b.flat

    def register_builtin_comm_hook(self, comm_hook_type: Any) -> None:
        """Register one of PyTorch's built-in hooks by its
        torchlite.distributed.BuiltinCommHookType: ALLREDUCE or FP16_COMPRESS (the default
        hooks allreduce_hook and fp16_compress_hook over this model's process group)."""
        from ...distributed import BuiltinCommHookType
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks
        hooks = {BuiltinCommHookType.ALLREDUCE: default_hooks.allreduce_hook,
                 BuiltinCommHookType.FP16_COMPRESS: default_hooks.fp16_compress_hook}
        if comm_hook_type not in hooks:
            raise TypeError(f"register_builtin_comm_hook: expected a "
                            f"torchlite.distributed.BuiltinCommHookType, got {comm_hook_type!r}")
        self.register_comm_hook(self.process_group, hooks[comm_hook_type])

    def _run_comm_hook(self, b, last):
        from ...distributed import GradBucket
        from ...futures import Future
        bucket = GradBucket(b.index, b.flat, [self._view(i) for i in b.params],
                            [self._params[i] for i in b.params], last)
        fut = self._comm_hook(self._comm_state, bucket)
        if not isinstance(fut, Future):
            raise RuntimeError(f"DistributedDataParallel: the communication hook must return a "
                               f"torchlite.futures.Future, got {type(fut).__name__}")
        return fut

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside this context the backward passes only accumulate gradients locally (no
        communication); the first backward after it averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _grad_ready(self, i):
        """Parameter i's gradient is accumulated (its post-accumulate hook)."""
        if not self._sync:
            return
        if self._ready[i]:
            raise RuntimeError(f"DistributedDataParallel: parameter {self._param_names[i]} was marked "
                               f"ready twice in one iteration (backward through the same forward "
                               f"twice, or a reentrant backward, is not supported)")
        self._started = True
        self._mark_ready(i, used=True)

    def _mark_ready(self, i, used):
        import torchlite
        self._ready[i] = True
        if not self._buckets_rebuilt:
            self._ready_order.append(i)
        self._used[i] = used
        p = self._params[i]
        g = p.grad
        b = self._where[i][0]
        if b.own and used and g is not None and g.is_contiguous() and g.dtype == b.dtype:
            b.buf = g.view(-1)        # reduced in place: .grad holds the average when done
        else:
            view = self._view(i)
            b.buf = b.flat
            with torchlite.no_grad():
                if g is None:
                    view.zero_()
                elif not (self.gradient_as_bucket_view and g.data_ptr() == view.data_ptr()):
                    view.copy_(g)
        b.pending -= 1
        if b.pending == 0:
            self._launch_ready_buckets()
        elif self._next_bucket and self._comm_hook is None \
                and self._buckets[self._next_bucket - 1].work is not None:
            self._buckets[self._next_bucket - 1].work.is_completed()   # let MPI make progress

    def _launch_ready_buckets(self):
        buckets = self._buckets
        while self._next_bucket < len(buckets) and buckets[self._next_bucket].pending == 0:
            self._reduce_bucket(buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(buckets):
            self._finalize()

    def _reduce_bucket(self, b):
        """Start bucket b's reduction (its flat buffer): the communication hook, or an
        all-reduce that averages (a sum, when the join context divides by the ranks still
        running).  Every rank reduces the buckets in the same order and the same way."""
        from ... import distributed as dist
        last = b.index == len(self._buckets) - 1
        op = dist.ReduceOp.AVG if self._grad_divisor is None else dist.ReduceOp.SUM
        if self._comm_hook is not None:
            b.work = self._run_comm_hook(b, last)
        elif self._pg.size() == 1:
            b.work = None                 # the average over one rank is the gradient itself
        elif last:
            # the last bucket: nothing is left to overlap with, and MPI's blocking all-reduce
            # is faster than its non-blocking one for large buffers
            dist.all_reduce(b.buf, op=op, group=self.process_group)
            b.work = None
        else:
            b.work = dist.all_reduce(b.buf, op=op, group=self.process_group, async_op=True)

    def _agree_on_used(self, used):
        """Which parameters some rank used this iteration (an all-reduce of flags)."""
        import torchlite
        from ... import distributed as dist
        flags = torchlite.tensor([1 if u else 0 for u in used], dtype=torchlite.int32)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.process_group)
        return flags.tolist()

    def _wait_buckets(self):
        """Wait for every bucket's reduction; a hook's result becomes the bucket's buffer."""
        for b in self._buckets:
            if b.work is not None:
                result = b.work.wait()
                if self._comm_hook is not None:
                    self._take_hook_result(b, result)
                b.work = None

    def _finalize(self):
        """Every bucket is in flight: wait for them and write the averages into .grad."""
        import torchlite
        used = self._agree_on_used(self._used) if self.find_unused_parameters else None
        self._wait_buckets()
        if self._grad_divisor is not None and self._comm_hook is None and self._pg.size() > 1:
            with torchlite.no_grad():
                for b in self._buckets:
                    b.buf.div_(self._grad_divisor)
        with torchlite.no_grad():
            for b in self._buckets:
                if b.buf is not b.flat:
                    continue         # a .grad reduced in place
                # A bucket whose gradients were all made by this backward (zero_grad set them to
                # None, the common case) hands its buffer over: .grad become views of it and the
                # bucket takes a new buffer, instead of copying the averages back into tensors
                # nothing else holds (a third of the step's memory traffic on one thread).
                handed = not self.gradient_as_bucket_view and all(
                    not self._had_grad[i] and (used is None or used[i]) for i in b.params)
                for i in b.params:
                    p = self._params[i]
                    if used is not None and not used[i]:
                        continue     # no rank produced a gradient: .grad stays as it was
                    view = self._view(i)
                    if self.gradient_as_bucket_view:
                        if p.grad is None or p.grad.data_ptr() != view.data_ptr():
                            p.grad = view
                    elif handed:
                        p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)
                if handed:
                    b.flat = torchlite.empty(b.numel, dtype=b.dtype)   # every element is written
        self._started = False
        self._sync = False

    def _take_hook_result(self, b, result):
        import torchlite
        if isinstance(result, (list, tuple)) and len(result) == 1:
            result = result[0]
        if not isinstance(result, torchlite.Tensor) or result.numel() != b.flat.numel():
            raise RuntimeError(f"DistributedDataParallel: the communication hook's future must "
                               f"hold a tensor of the bucket's {b.flat.numel()} elements, got "
                               f"{type(result).__name__}")
        if result.data_ptr() != b.flat.data_ptr():
            with torchlite.no_grad():
                b.flat.copy_(result.reshape(-1))

    def __getstate__(self) -> NoReturn:
        raise TypeError("DistributedDataParallel cannot be pickled; save self.module (or its "
                        "state_dict) instead")

    # ---- uneven inputs (a Joinable) -------------------------------------------------------------
    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False) -> Join:
        """A context manager for training on uneven inputs (ranks with different numbers of
        batches): `with model.join(): for batch in my_batches: ...`.  A rank that runs out
        keeps answering the others' collectives with zero gradients until all have run out;
        then the model of a last rank to finish is copied to every rank.  Gradients are
        averaged over the initial world size, or, with divide_by_initial_world_size=False,
        over the ranks still running (a communication hook does its own averaging).
        throw_on_early_termination=True: every rank raises RuntimeError as soon as one runs
        out.  enable=False: no checks (inputs known to be even)."""
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs) -> JoinHook:
        """DDP's JoinHook (kwargs: divide_by_initial_world_size)."""
        unknown = set(kwargs) - {"divide_by_initial_world_size"}
        if unknown:
            raise ValueError(f"DistributedDataParallel.join_hook: unexpected keyword arguments "
                             f"{sorted(unknown)}")
        object.__setattr__(self, "_divide_by_initial_world_size",
                           bool(kwargs.get("divide_by_initial_world_size", True)))
        return _JoinHook(self)

    @property
    def join_device(self) -> device:
        import torchlite
        return torchlite.device("cpu")

    @property
    def join_process_group(self) -> Any:
        return self.process_group

    def _agree_on_sync(self, mine):
        """Whether this iteration averages gradients: yes when some rank wants it (a joined
        rank says no)."""
        from ...distributed.algorithms.join import _flag_all_reduce
        return _flag_all_reduce(1 if mine else 0, self.process_group, "cpu").item() > 0

    def _highest_rank(self, mine):
        """The highest group rank for which `mine` is true on that rank (-1: none)."""
        import torchlite
        from ... import distributed as dist
        t = torchlite.tensor([self._pg.rank() if mine else -1], dtype=torchlite.int64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        return int(t.item())

    def _broadcast_buffers_from_running(self, running):
        """Under join: the buffers from the highest rank still running."""
        if not self.broadcast_buffers or self._pg.size() == 1:
            return
        src = self._highest_rank(running)
        buffers = list(self.module.buffers())
        if buffers and src >= 0:
            _broadcast_coalesced(buffers, self._pg, src_group_rank=src)

    def _shadow_iteration(self):
        """A joined rank's part of one iteration of the ranks still running."""
        import torchlite
        sync = self._agree_on_sync(False)
        self._broadcast_buffers_from_running(False)
        if not sync or self._pg.size() == 1:
            return
        object.__setattr__(self, "_grad_divisor",
                           None if self._divide_by_initial_world_size else 1)
        with torchlite.no_grad():
            for b in self._buckets:
                b.buf = _flat(b)
                b.buf.zero_()
        for b in self._buckets:
            self._reduce_bucket(b)
        if self.find_unused_parameters:
            self._agree_on_used([False] * len(self._params))
        self._wait_buckets()

    def _sync_final_model(self, is_last_joiner):
        """After every rank has joined: the parameters and buffers of the highest last
        joiner, to every rank."""
        src = self._highest_rank(is_last_joiner)
        tensors = list(self.module.parameters()) + list(self.module.buffers())
        _broadcast_coalesced(tensors, self._pg, src_group_rank=max(src, 0))


class _JoinHook(JoinHook):
    """DDP's part for a rank that has run out of inputs."""

    def __init__(self, ddp):
        self.ddp = ddp

    def main_hook(self):
        self.ddp._shadow_iteration()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


def _flat(b):
    """Bucket b's flat buffer; a bucket of its own makes one (zeros) only when it needs it: a
    gradient it cannot reduce in place, or a joined rank's zeros."""
    if b.flat is None:
        import torchlite
        b.flat = torchlite.zeros(b.numel, dtype=b.dtype)
    return b.flat


def _make_hook(ref, i):
    def hook(param):
        ddp = ref()
        if ddp is not None:
            ddp._grad_ready(i)
    return hook


def _parameters_reached(out):
    """ids of the leaf tensors that the autograd graph of `out`'s tensors reaches."""
    import torchlite
    from ...autograd.graph import reached_leaves
    from ...utils._pytree import tree_leaves
    tensors = [t for t in tree_leaves(out) if isinstance(t, torchlite.Tensor)]
    reached = {id(t) for t in tensors if t.grad_fn is None and t.requires_grad}  # returned as is
    reached |= {id(v) for v in reached_leaves([t.grad_fn for t in tensors])}
    return reached


def _broadcast_coalesced(tensors, pg, src_group_rank=0, cap_bytes=64 * 1024 * 1024):
    """Broadcast tensors from group rank src_group_rank, a few flat buffers per dtype instead
    of one message per tensor."""
    import torchlite
    from ... import distributed as dist
    if pg.size() == 1 or not tensors:
        return
    by_dtype = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    src = pg.ranks[src_group_rank]
    group = None if pg is dist.group.WORLD else pg
    for dtype, ts in by_dtype.items():
        chunk, size = [], 0
        for t in ts + [None]:
            if t is not None and (not chunk or size + t.numel() * t.element_size() <= cap_bytes):
                chunk.append(t)
                size += t.numel() * t.element_size()
                continue
            with torchlite.no_grad():
                flat = torchlite.cat([c.detach().reshape(-1) for c in chunk])
                dist.broadcast(flat, src=src, group=group)
                if pg.rank() != src_group_rank:
                    off = 0
                    for c in chunk:
                        n = c.numel()
                        c.detach().copy_(flat[off:off + n].view(tuple(c.shape)))
                        off += n
            chunk, size = ([t], t.numel() * t.element_size()) if t is not None else ([], 0)
