"""Custom differentiable ops: subclass Function with static forward(ctx, *args) and
backward(ctx, *grad_outputs), then call MyOp.apply(*args), as in PyTorch."""
import functools

from .graph import Node, SavedTensor, needs_grad, record
from .grad_mode import no_grad


class FunctionCtx:
    """What forward tells backward: saved tensors, flags, and any attribute you set on it."""

    def __init__(self):
        self._to_save = ()
        self._non_differentiable = ()
        self._dirty = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._node = None

    def save_for_backward(self, *tensors):
        """Keep tensors for backward; modifying one in place before backward is an error."""
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        node = self._node
        if node is None:                   # apply() ran without recording a graph
            return tuple(self._to_save)
        return tuple(node.saved(f"saved_tensors[{i}]") for i in range(len(self._to_save)))


class BackwardFunction(Node):
    """The node a custom Function records; its name is <Function name>Backward."""

    def __init__(self, fn_cls, ctx):
        super().__init__()
        self._fn_cls = fn_cls
        self.ctx = ctx

    def name(self):
        return self._fn_cls.__name__ + "Backward"

    def backward(self, *grads):
        grads_in = self._fn_cls.backward(self.ctx, *grads)
        if not isinstance(grads_in, tuple):
            grads_in = (grads_in,)
        n = len(self.next_functions)
        if len(grads_in) < n or any(g is not None for g in grads_in[n:]):
            raise RuntimeError(f"function {self.name()} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(grads_in)})")
        return tuple(grads_in[:n])


class Function:
    """Base class of custom ops.

    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp(); ctx.save_for_backward(y); return y
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (y,) = ctx.saved_tensors; return g * y
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor, _wrap
        ctx = FunctionCtx()
        tensors = [a if isinstance(a, Tensor) else None for a in args]
        ctx.needs_input_grad = tuple(t is not None and t.requires_grad for t in tensors)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        if not needs_grad(*tensors):
            return outputs
        # an output that is an input (or marked dirty) gets a new Tensor object, so the caller's
        # leaf is not turned into a non-leaf
        dirty = {id(t) for t in ctx._dirty}
        outs = tuple(_wrap(o._data) if isinstance(o, Tensor) and (any(o is t for t in tensors) or id(o) in dirty)
                     else o for o in outs)
        node = BackwardFunction(cls, ctx)
        nondiff = {id(t) for t in ctx._non_differentiable}
        diff_outs = tuple(o if isinstance(o, Tensor) and id(o) not in nondiff else None for o in outs)
        record(node, tensors, diff_outs)
        node._materialize = ctx.materialize_grads
        for i, t in enumerate(ctx._to_save):
            if t is None:
                node._saved[f"saved_tensors[{i}]"] = None
            else:
                is_out = any(t is o for o in diff_outs if o is not None)
                node._saved[f"saved_tensors[{i}]"] = SavedTensor(t, node, is_out)
        ctx._node = node
        return outs[0] if single else outs


def once_differentiable(backward):
    """Decorator for a backward that is not itself differentiable (runs under no_grad)."""
    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            return backward(ctx, *grads)
    return wrapper
