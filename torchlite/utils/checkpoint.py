"""Activation checkpointing (PyTorch's torch.utils.checkpoint): run a piece of the model
without keeping its intermediate results, and run it again during backward to get them.
Memory for compute: a deep network's training step then holds only the checkpointed pieces'
inputs and outputs.

Both of PyTorch's modes give the same gradients here; they differ in what they accept.  The
recomputation runs the function again with autograd on and backpropagates through it: the
gradients of its tensor inputs go back up the graph, those of the parameters it uses (a
Module's, or any leaf it reaches) are accumulated into their .grad, as PyTorch's reentrant
checkpoint does.  A Module or its method names its parameters; for any other function (a
closure, a functools.partial, checkpoint_sequential's segments) the first run records its
graph once to find the leaves it reaches, then drops it.  As in PyTorch's reentrant mode,
torchlite.autograd.grad (which does not accumulate) cannot ask for the parameters' gradients
through a checkpoint; .backward() can.  With
preserve_rng_state (the default) the recomputation draws the same random numbers (dropout
masks) as the first run."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError"]


class CheckpointError(RuntimeError):
    """The recomputation produced tensors unlike the first run's (determinism_check)."""


def _rng():
    from .._ops import random
    return random


def _meta(outputs):
    outs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None for o in outs]


class _Checkpoint(Function):
    @staticmethod
    def forward(ctx, run, n_args, *inputs):
        ctx.run = run
        args, extra = inputs[:n_args], inputs[n_args:]
        ctx.n_extra = len(extra)
        ctx.tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*[args[i] for i in ctx.tensor_pos])
        outputs = run.take_first_outputs()
        if outputs is None:
            outputs = run.call(args)
        ctx.meta = _meta(outputs) if run.check else None
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        from ..autograd import backward as run_backward
        saved = ctx.saved_tensors
        args = list(ctx.others)
        detached = []
        for pos, t in zip(ctx.tensor_pos, saved):
            d = t.detach()
            d.requires_grad_(t.requires_grad)
            args[pos] = d
            detached.append(d)
        with enable_grad():
            outputs = ctx.run.call(tuple(args), recompute=True)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        if ctx.meta is not None and _meta(outputs) != ctx.meta:
            raise CheckpointError(
                "torchlite.utils.checkpoint: the recomputed outputs differ from the first "
                f"run's in shape or dtype ({_meta(outputs)} vs {ctx.meta}); the checkpointed "
                "function must compute the same thing when run again")
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            run_backward([o for o, _ in pairs], [g for _, g in pairs])
        grads_in = [None] * len(ctx.others)
        for pos, d in zip(ctx.tensor_pos, detached):
            grads_in[pos] = d.grad if d.requires_grad else None
        return (None, None) + tuple(grads_in) + (None,) * ctx.n_extra


class _Run:
    """function(*args) with the random state of its first run restored when it runs
    again."""

    def __init__(self, function, kwargs, preserve_rng_state, check):
        self.function, self.kwargs = function, kwargs
        self.check = check
        self.rng_state = _rng().get_rng_state() if preserve_rng_state else None
        self.first = None           # the outputs of a first run made to find the leaves used

    def take_first_outputs(self):
        first, self.first = self.first, None
        return first

    def leaves_used(self, args):
        """Run the function once recording its graph, keep its outputs (detached: the graph
        and what it saved go) for the checkpoint's forward, and return the leaves requiring
        grad that the outputs depend on, other than args: the parameters a closure or a
        functools.partial reaches, which nothing else can find."""
        from ..autograd.graph import reached_leaves
        with enable_grad():
            outputs = self.call(args)
        outs = outputs if isinstance(outputs, tuple) else (outputs,)
        roots = [o.grad_fn if o.grad_fn is not None else None for o in outs
                 if isinstance(o, Tensor) and o.requires_grad]
        given = {id(a) for a in args if isinstance(a, Tensor)}
        leaves = [t for t in reached_leaves(roots) if id(t) not in given]
        detached = tuple(o.detach() if isinstance(o, Tensor) else o for o in outs)
        self.first = detached if isinstance(outputs, tuple) else detached[0]
        return leaves

    def call(self, args, recompute=False):
        if not recompute or self.rng_state is None:
            return self.function(*args, **self.kwargs)
        rng = _rng()
        now = rng.get_rng_state()
        rng.set_rng_state(self.rng_state)
        try:
            return self.function(*args, **self.kwargs)
        finally:
            rng.set_rng_state(now)


def _grad_enabled():
    from ..autograd.grad_mode import is_grad_enabled
    return is_grad_enabled()


def _parameters_of(function):
    """The parameters a Module (or a bound method of one) uses: they are passed to the
    recorded node too, so it is recorded even when no input requires grad."""
    from ..nn.modules.module import Module
    owner = function if isinstance(function, Module) else getattr(function, "__self__", None)
    return list(owner.parameters()) if isinstance(owner, Module) else []


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], Any] | None = None, determinism_check: str = "default",
               debug: bool = False, preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """function(*args, **kwargs), keeping none of its intermediate results for backward
    (they are recomputed then).  See the module docstring for the two modes."""
    if use_reentrant is None:
        warnings.warn("torchlite.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly (PyTorch requires it); both values compute the same "
                      "gradients here.", stacklevel=2)
        use_reentrant = True
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if context_fn is not None and use_reentrant:
        raise ValueError("Passing context_fn or debug is only supported when "
                         "use_reentrant=False.")
    run = _Run(function, kwargs, preserve_rng_state, determinism_check == "default")
    extra = _parameters_of(function)
    if not extra and _grad_enabled():
        # a closure, a partial or a plain function: its parameters are found by running it
        # once recording (transiently: the graph is dropped), or they would get no gradient
        extra = run.leaves_used(args)
    if not any(isinstance(a, Tensor) and a.requires_grad for a in args) and \
            not any(p.requires_grad for p in extra) and use_reentrant:
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)
    return _Checkpoint.apply(run, len(args), *args, *extra)


def checkpoint_sequential(functions: Module | Iterable[Callable[..., Any]], segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """A Sequential (or a list of modules) run in `segments` pieces, each but the last
    checkpointed."""
    from ..nn.modules.container import Sequential
    fns = list(functions.children()) if isinstance(functions, Sequential) else list(functions)
    if segments < 1:
        raise ValueError("segments must be at least 1")
    size = max(len(fns) // segments, 1)

    def run_range(lo, hi):
        def forward(x):
            for f in fns[lo:hi]:
                x = f(x)
            return x
        return forward
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(run_range(start, end), input, use_reentrant=use_reentrant, **kwargs)
    return run_range(end, len(fns))(input)

