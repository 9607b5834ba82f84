"""torchlite.autograd: define-by-run reverse-mode differentiation.

Ops record a graph of Nodes as they run (graph.py) when grad mode is on and an input requires
grad; backward() / grad() run it from the outputs to the leaves (engine.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import anomaly, graph
from .anomaly import detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled
from .engine import run_backward, backward, _tensors, _root_grads, _filled_like
from .graph import GradientEdge, get_gradient_edge  # noqa: F401
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        is_inference_mode_enabled)
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from .variable import Variable
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._tensor import Tensor

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "gradcheck", "gradgradcheck", "Variable"]


def grad(outputs: Tensor | GradientEdge | Sequence[Tensor | GradientEdge],
         inputs: Tensor | GradientEdge | Sequence[Tensor | GradientEdge],
         grad_outputs: Tensor | Sequence[Tensor | None] | None = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple[Tensor, ...]:
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
    outs = _tensors(outputs, "outputs", edges=True)
    ins = _tensors(inputs, "inputs", edges=True)
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        return _batched_grad(outs, ins, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    grads = _root_grads(outs, grad_outputs, create_graph)
    for t in ins:
        if type(t) is not GradientEdge and not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outs, grads, retain, create_graph, inputs=ins, accumulate=False)
    final = []
    for i, (t, g) in enumerate(zip(ins, result)):
        if g is None:
            if materialize_grads and type(t) is GradientEdge:
                raise RuntimeError("materialize_grads: no zeros can be made for an unused "
                                   "GradientEdge input (its shape is unknown)")
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
    # torch.autograd.profiler, .functional and .forward_ad are reached as attributes in
    # scripts; each loads on first use (they sit on the ops, which load after autograd's core)
    if name in ("profiler", "functional", "forward_ad"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'torchlite.autograd' has no attribute '{name}'")
