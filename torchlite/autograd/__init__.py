"""torchlite.autograd: define-by-run reverse-mode differentiation.

Ops record a graph of Nodes as they run (graph.py) when grad mode is on and an input requires
grad; backward() / grad() run it from the outputs to the leaves (engine.py)."""
from . import anomaly, graph, functional
from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .engine import run_backward
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from .variable import Variable
from .._autocast_state import entry as _autocast, run as _autocast_run

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "gradcheck", "gradgradcheck", "Variable"]


def _tensors(x, name):
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return tuple(x)
    raise TypeError(f"{name} must be a Tensor or a sequence of Tensors")


def _filled_like(t, value):
    """value everywhere, in t's shape, dtype, device and memory order (ones_like/zeros_like
    made from the array layer: autograd's core imports no op)."""
    from .._dispatch import array as _A
    from .._tensor import _wrap
    arr = _A.empty_like(t._data, t._data.dtype)
    _A.fill_(arr, value)
    return _wrap(arr)


def _root_grads(outputs, grad_outputs, create_graph):
    """One gradient per output: the given ones (checked against the outputs' shapes), or 1 for
    a one-element output."""
    from .._tensor import Tensor
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    elif not isinstance(grad_outputs, (tuple, list)):
        raise TypeError(f"'{type(grad_outputs).__name__}' object is not iterable")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if not o._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if o.is_complex():
                raise RuntimeError("grad can be implicitly created only for real scalar outputs")
            g = _filled_like(o, 1)
        elif g._data.shape != o._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} "
                               f"and output[{i}] has a shape of {o.shape}.")
        elif not create_graph:
            g = g.detach()
        out.append(g)
    if len(out) < len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(out)} gradients")
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of `tensors` into the .grad of the leaves that need them
    (only into `inputs`, leaves or not, when given).  The graph is freed unless retain_graph
    (which defaults to create_graph)."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(backward, locals())
    roots = _tensors(tensors, "tensors")
    if inputs is not None:
        inputs = _tensors(inputs, "inputs")
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _root_grads(roots, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    run_backward(roots, grads, retain, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (not accumulated into .grad).
    With create_graph, the result is itself differentiable (grad of grad, Hessian-vector
    products).  An input the outputs do not depend on is an error unless allow_unused (then
    None) or materialize_grads (then zeros).  is_grads_batched: the first dim of each
    grad_output is a batch of vectors, one gradient computation per entry."""
    if _autocast.regions and _autocast.here.active:
        return _autocast_run(grad, locals())
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grads = _root_grads(outs, grad_outputs, create_graph)
    for t in ins:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outs, grads, retain, create_graph, inputs=ins, accumulate=False)
    final = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if materialize_grads:
                g = _filled_like(t, 0)
            elif not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been "
                                   f"used in the graph. Set allow_unused=True if this is the desired "
                                   f"behavior.")
        elif not create_graph:
            g = g.detach()
        final.append(g)
    return tuple(final)


def _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph, allow_unused, materialize):
    """is_grads_batched: one grad() per row of the grad_outputs, stacked."""
    from .._tensor import Tensor
    from .._ops.joining import stack
    gos = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    n = gos[0].shape[0]
    rows = [grad(outs, ins, [g[b] for g in gos], retain_graph=True if b < n - 1 else retain_graph,
                 create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize)
            for b in range(n)]
    return tuple(None if rows[0][k] is None else stack([r[k] for r in rows]) for k in range(len(ins)))


def __getattr__(name):
    # torch.autograd.profiler is reached as an attribute in scripts; load it on first use
    if name == "profiler":
        import importlib
        return importlib.import_module(f"{__name__}.profiler")
    raise AttributeError(f"module 'torchlite.autograd' has no attribute '{name}'")
