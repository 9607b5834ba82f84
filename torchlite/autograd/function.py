"""Custom differentiable ops: subclass Function with static forward(ctx, *args) and
backward(ctx, *grad_outputs), then call MyOp.apply(*args), as in PyTorch.

As in PyTorch, `ctx` is the backward node itself: an instance of `<MyOp>Backward`, a class
made once per Function subclass, so `out.grad_fn.saved_tensors` and friends work too."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .graph import Node, needs_grad, pack, record
from .grad_mode import _state, no_grad

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._tensor import Tensor


class FunctionCtx:
    """What forward tells backward: saved tensors, flags, and any attribute you set on it."""

    _to_save = ()
    _n_saved = 0
    _saved = None
    _released = False
    _non_differentiable = ()
    _dirty = ()
    materialize_grads = True
    needs_input_grad = ()

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors (inputs, outputs or None) for backward; modifying one in place before
        backward is an error."""
        self._to_save = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        self._saved_for_forward = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """These outputs will not require grad; backward gets zeros (or None) for them."""
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors: Tensor) -> None:
        """These inputs were modified in place by forward (and are returned as outputs)."""
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple[Tensor, ...]:
        """The tensors given to save_for_backward, checked for in-place changes (in jvp, the
        ones given to save_for_forward)."""
        if getattr(self, "_in_jvp", False):
            return tuple(getattr(self, "_saved_for_forward", ()))
        if self._saved is not None or self._released:
            return tuple(self.saved(f"saved_tensors[{i}]") for i in range(self._n_saved))
        return tuple(self._to_save)         # forward is running, or apply() recorded no graph


class BackwardFunction(FunctionCtx, Node):
    """The node a custom Function records (and the ctx its forward and backward receive)."""

    _forward_cls = None

    def name(self) -> str:
        return type(self).__name__

    def apply(self, *grads) -> tuple[Tensor | None, ...]:
        return self.backward(*grads)

    def backward(self, *grads) -> tuple[Tensor | None, ...]:
        grads_in = self._forward_cls.backward(self, *grads)
        if not isinstance(grads_in, tuple):
            grads_in = (grads_in,)
        n = len(self.next_functions)
        if len(grads_in) < n or any(g is not None for g in grads_in[n:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(grads_in)})")
        return tuple(self._conform(i, g) for i, g in enumerate(grads_in[:n]))

    def _conform(self, i, g):
        """Check a returned gradient against the input it is for (PyTorch's validation)."""
        meta = self._in_meta[i]             # (shape, dtype code) of the input, None for a non-tensor
        if meta is None:
            if g is not None:
                raise RuntimeError(f"function {self.name()} returned a gradient different than None "
                                   f"at position {i + 1}, but the corresponding forward input was "
                                   f"not a Variable")
            return None
        if g is None or self.next_functions[i][0] is None:
            return None
        from .engine import _conform
        return _conform(g, meta[0], meta[1], self.name(), i)


def _backward_class(fn_cls):
    """<Name>Backward, the node class of Function subclass fn_cls (made once)."""
    cls = fn_cls.__dict__.get("_backward_cls")
    if cls is None:
        cls = type(fn_cls.__name__ + "Backward", (BackwardFunction,), {"_forward_cls": fn_cls})
        fn_cls._backward_cls = cls
    return cls


class Function:
    """Base class of custom ops.

    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp(); ctx.save_for_backward(y); return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (y,) = ctx.saved_tensors; return g * y

    forward may also take no ctx if the class defines setup_context(ctx, inputs, output)."""

    @staticmethod
    def forward(ctx: Any, *args, **kwargs) -> Any:
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs) -> Any:
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs) -> Any:
        """Run forward (without recording what it does inside) and record one node for it."""
        from .._tensor import Tensor
        ctx = _backward_class(cls)()
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        recording = _state.enabled and any(t is not None and t._requires_grad for t in tensors)
        if not recording and not _state.enabled:    # under no_grad: for tangents only (needs_grad)
            recording = needs_grad(*tensors)
        ctx.needs_input_grad = tuple(recording and t is not None and t._requires_grad for t in tensors)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, outputs)
            else:
                outputs = cls.forward(ctx, *args, **kwargs)
        if not recording:
            return outputs
        return _record_function(ctx, tensors, outputs)


def _record_function(node, tensors, outputs):
    """Link the Function's node into the graph (see Function.apply)."""
    from .._tensor import Tensor, _wrap
    single = not isinstance(outputs, tuple)
    outs = list((outputs,) if single else outputs)
    dirty = node._dirty
    nondiff = node._non_differentiable
    for t in dirty:
        if not any(t is o for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not "
                               "returned as output. The inputs that are modified inplace must all "
                               "be outputs of the Function.")
        if t._requires_grad and t.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")
        t._bump_version()                       # as PyTorch: marking dirty counts as a change
    for i, o in enumerate(outs):
        # an output that is an input (not modified) becomes a new tensor, so the caller's
        # tensor keeps its own history
        if isinstance(o, Tensor) and any(o is t for t in tensors) and not any(o is d for d in dirty):
            outs[i] = _wrap(o._data)
    diff = [o if isinstance(o, Tensor) and not any(o is n for n in nondiff) else None for o in outs]
    record(node, tensors, tuple(diff))      # edges first: a dirty input's old history
    node._in_meta = [None if t is None else (t._data.shape, t._data.dtype) for t in tensors]
    node._materialize = node.materialize_grads
    for i, o in enumerate(outs):            # non-differentiable outputs still get zeros in backward
        if node._out_meta[i] is None and isinstance(o, Tensor):
            node._out_meta[i] = (o._data.shape, o.dtype, o.device)
    saved = node._saved = {}
    for i, t in enumerate(node._to_save):
        saved[f"saved_tensors[{i}]"] = pack(t, t is not None and any(t is o for o in diff if o is not None))
    node._n_saved = len(node._to_save)
    node._to_save = ()                      # the packed entries hold them now (no cycle via outputs)
    return outs[0] if single else tuple(outs)


class DelayedErrorBackward(Node):
    """The history of a gradient computed by a once_differentiable backward: differentiating
    it again raises."""

    def backward(self, *grads) -> tuple[Tensor | None, ...]:
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for a backward that is not itself differentiable: it runs under no_grad, and
    a double backward through its result raises."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        from .._tensor import Tensor
        with no_grad():
            result = backward(ctx, *grads)
        if not (_state.enabled and any(isinstance(g, Tensor) and g._requires_grad for g in grads)):
            return result
        many = isinstance(result, tuple)
        outs = list(result) if many else [result]
        for i, r in enumerate(outs):
            if isinstance(r, Tensor) and r.is_floating_point():
                outs[i] = r.detach()
                record(DelayedErrorBackward(), [g for g in grads if isinstance(g, Tensor)], outs[i])
        return tuple(outs) if many else outs[0]
    return wrapper
