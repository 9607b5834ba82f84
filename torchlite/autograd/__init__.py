"""torchlite.autograd: define-by-run reverse-mode differentiation.

Ops record a graph of Nodes as they run (graph.py) when grad mode is on and an input requires
grad; backward() / grad() run it from the outputs to the leaves (engine.py)."""
from . import anomaly, graph
from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled
from .engine import run_backward
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "gradcheck", "gradgradcheck"]


def _tensors(x, name):
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return tuple(x)
    raise TypeError(f"{name} must be a Tensor or a sequence of Tensors")


def _root_grads(outputs, grad_outputs, create_graph):
    from .._ops.creation import ones_like
    from .._tensor import Tensor
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs: got "
                           f"{len(grad_outputs)} gradients for {len(outputs)} outputs")
    out = []
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if not o.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if o.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = ones_like(o)
        elif tuple(g.shape) != tuple(o.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} "
                               f"and output[{i}] has a shape of {tuple(o.shape)}.")
        elif not create_graph:
            g = g.detach()
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of `tensors` into the .grad of the leaves that need them
    (only into `inputs`, when given).  The graph is freed unless retain_graph."""
    roots = _tensors(tensors, "tensors")
    grads = _root_grads(roots, grad_tensors, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        inputs = _tensors(inputs, "inputs")
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    run_backward(roots, grads, retain, create_graph, inputs=inputs, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, returned (not accumulated into .grad).
    With create_graph, the result is itself differentiable (grad of grad)."""
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    for t in ins:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _root_grads(outs, grad_outputs, create_graph)
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outs, grads, retain, create_graph, inputs=ins, accumulate=False)
    final = []
    for t, g in zip(ins, result):
        if g is None:
            if materialize_grads:
                from .._ops.creation import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        final.append(g)
    return tuple(final)
