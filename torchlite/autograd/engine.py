"""The backward engine: runs the graph from the roots to the leaves.

Iterative (no recursion limit): a first walk counts, for every node reachable from the roots,
how many edges lead into it; a node runs once all of them have delivered their gradient (so
each node runs exactly once, with the sum of its incoming gradients).  Saved tensors are
released as each node finishes unless retain_graph is set."""
from . import anomaly
from .graph import AccumulateGrad, edge
from .grad_mode import _state


def _dependencies(roots):
    deps = {}
    stack = [n for n in roots if n is not None]
    seen = set(stack)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return deps


def _add(buf, i, g):
    buf[i] = g if buf[i] is None else buf[i] + g


def _materialize(node, grads):
    """Zeros for the outputs no gradient reached (backward formulas get real tensors)."""
    from .._ops.creation import zeros
    meta = getattr(node, "_out_meta", None)
    out = []
    for i, g in enumerate(grads):
        if g is None and meta is not None and meta[i] is not None:
            shape, dtype, device = meta[i]
            g = zeros(shape, dtype=dtype, device=device)
        out.append(g)
    return out


def _accumulate(node, grad, create_graph):
    """AccumulateGrad: leaf.grad += grad (a fresh tensor the first time)."""
    leaf = node.variable
    for hook in getattr(leaf, "_hooks", None) or ():
        r = hook(grad)
        if r is not None:
            grad = r
    if not create_graph:
        grad = grad.detach()
    if leaf.grad is None:
        leaf.grad = grad if create_graph else grad.clone()
    else:
        leaf.grad = leaf.grad + grad


def run_backward(roots, grad_roots, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate grad_roots from the root tensors.  With `inputs`, return the gradients
    reaching them (autograd.grad) and, unless accumulate, write no .grad at all."""
    root_edges = [edge(r) for r in roots]
    deps = _dependencies([n for n, _ in root_edges])
    buffers = {}
    for (node, nr), g in zip(root_edges, grad_roots):
        if node is not None:
            buf = buffers.setdefault(node, [None] * max(node._num_outputs, 1))
            _add(buf, nr, g)
    captures = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            captures.setdefault(edge(t), []).append(i)
    captured = [None] * (len(inputs) if inputs is not None else 0)
    only = None if inputs is None or not accumulate else {id(t) for t in inputs}

    ready = [n for n in buffers if deps.get(n, 0) == 0]
    prev_mode = _state.enabled
    _state.enabled = create_graph
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None) or [None] * max(node._num_outputs, 1)
            for nr, g in enumerate(grads):
                for i in captures.get((node, nr), ()):
                    captured[i] = g
            if isinstance(node, AccumulateGrad):
                if grads[0] is not None and accumulate and (only is None or id(node.variable) in only):
                    _accumulate(node, grads[0], create_graph)
                continue
            for hook in node._pre_hooks:
                r = hook(tuple(grads))
                if r is not None:
                    grads = list(r)
            for nr, hooks in (getattr(node, "_tensor_hooks", None) or {}).items():
                for hook in hooks:
                    r = hook(grads[nr])
                    if r is not None:
                        grads[nr] = r
            if all(g is None for g in grads):
                grads_in = (None,) * len(node.next_functions)
            else:
                grads_in = node.backward(*(_materialize(node, grads) if getattr(node, "_materialize", True) else grads))
                if not isinstance(grads_in, tuple):
                    grads_in = (grads_in,)
            if len(grads_in) != len(node.next_functions):
                raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                                   f"(expected {len(node.next_functions)}, got {len(grads_in)})")
            for hook in node._hooks:
                r = hook(grads_in, tuple(grads))
                if r is not None:
                    grads_in = tuple(r)
            if anomaly._enabled:
                anomaly.check_nan(node, grads_in)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, grads_in):
                if nxt is None:
                    continue
                if g is not None:
                    buf = buffers.setdefault(nxt, [None] * max(nxt._num_outputs, 1))
                    _add(buf, nr, g)
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    ready.append(nxt)
    finally:
        _state.enabled = prev_mode
    return captured
