"""The backward engine: runs the graph from the roots to the leaves.

Iterative (no recursion limit): a first walk counts, for every node reachable from the roots,
how many edges lead into it; a node runs once all of them have delivered their gradient (so
each node runs exactly once, with the sum of its incoming gradients).  Saved tensors are
released as each node finishes unless retain_graph is set.

With `inputs` (autograd.grad, backward(inputs=...)) only the part of the graph that leads to
them runs, and the gradients reaching them are captured."""
from __future__ import annotations

import operator
import sys
from typing import TYPE_CHECKING

from . import anomaly
from .graph import BackwardCall, GradientEdge, edge_of, expandable_to, running, sum_to
from .._dispatch import array as _A
from .._dispatch import elementwise as _ew
from .._tensor import Tensor, _wrap
from .grad_mode import _state
from .._autocast_state import entry as _autocast, run as _autocast_run

if TYPE_CHECKING:
    from collections.abc import Sequence


_EW_ADD = _ew.BINARY["add"]
_NOT_RUN = object()      # _special_node: grad() does not need the node, so its backward is skipped


def _hook_result(hook, grad, new):
    """A tensor hook may replace the gradient, but not change its dtype, device or shape
    (PyTorch's checks)."""
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(new, Tensor):
        raise TypeError(f"hook '{name}' returned a {type(new).__name__}, expected a Tensor or None")
    if new.dtype is not grad.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.dtype} got {new.dtype})")
    if new.device != grad.device:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {grad.device} got {new.device})")
    if tuple(new.shape) != tuple(grad.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return new


def _dependencies(roots):
    """{node: number of edges into it} over the graph reachable from roots."""
    deps = {}
    stack = list(dict.fromkeys(n for n in roots if n is not None))   # roots may share a node
    seen = set(stack)
    push, add = stack.append, seen.add
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            if nxt in seen:     # (a root is seen before any edge reaches it)
                deps[nxt] = deps.get(nxt, 0) + 1
            else:
                deps[nxt] = 1
                add(nxt)
                push(nxt)
    return deps


def _needed(roots, targets):
    """The nodes whose backward must run to get gradients to `targets` (the nodes of the
    inputs): those from which some target can be reached, target nodes excluded unless they
    themselves lead to another target."""
    # iterative post-order DFS: a node is needed if a child is a target or is needed
    needed = set()
    done = set()
    stack = [(n, False) for n in roots if n is not None]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            for nxt, _ in node.next_functions:
                if nxt is not None and (nxt in targets or nxt in needed):
                    needed.add(node)
                    break
            continue
        if node in done:
            continue
        done.add(node)
        stack.append((node, True))
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in done:
                stack.append((nxt, False))
    return needed


def _materialize(node, grads):
    """Zeros for the outputs no gradient reached (backward formulas get real tensors)."""
    meta = node._out_meta
    out = list(grads)
    for i, g in enumerate(out):
        if g is None and meta is not None and meta[i] is not None:
            shape, dtype, device = meta[i]
            out[i] = _wrap(_A.full(shape, 0, dtype.code, device=device))
    return out


def _run_tensor_hooks(node, grads):
    """Hooks registered on the node's output tensors (in registration order), then
    retain_grad, which always sees the final gradient."""
    grads = list(grads)
    for nr, hooks in (node._tensor_hooks or {}).items():
        for hook in list(hooks):
            if grads[nr] is not None:
                r = hook(grads[nr])
                if r is not None:
                    grads[nr] = _hook_result(hook, grads[nr], r)
    for nr, ref in (node._retained or {}).items():
        t = ref()
        if t is not None and grads[nr] is not None:
            _store_grad(t, grads[nr], _state.enabled)
    return grads


def _ref_counts(t):
    """References to a gradient tensor, its array and the array's storage, and, for a view,
    to its base tensor and the base's array (see _sole_owner)."""
    d = t._data
    base = getattr(t, "_base", None)
    counts = (sys.getrefcount(t), sys.getrefcount(d), sys.getrefcount(getattr(d, "storage", None)))
    if base is None:
        return counts
    return counts + (sys.getrefcount(base), sys.getrefcount(base._data),
                     getattr(base, "_base", None) is None)


def _probe_ref_counts(view):
    t = _wrap(_A.empty((1,), 8))
    if view:
        t = t.view(1)
    sole = _sole_counts(t)
    other = t                    # a second holder must show, or the counts tell nothing
    if _sole_counts(t)[0] <= sole[0]:
        return (0,) * len(sole)  # (an interpreter whose counts do not move): never steal
    del other
    return sole


def _sole_counts(grad):
    return _ref_counts(grad)


# What _ref_counts gives when the caller's local variable is the only reference to a tensor
# (or to a view, whose base nothing else holds) that alone holds its array and storage:
# measured on the first backward (Tensor's view methods are installed after this module),
# through the same depth of calls as the engine's (engine -> _sole_owner -> _ref_counts), so
# the baseline follows the interpreter's own counting.
_SOLE_REFS = None


def _allocator_owned(d):
    """Whether device array d's memory is its allocator's own block (CudaArray says)."""
    method = getattr(d, "allocator_owned", None)
    return method is not None and method()


def _sole_owner(grad):
    """Whether the engine holds the only reference to `grad`, its array and its memory, so a
    leaf may take it as its .grad without a copy (PyTorch's AccumulateGrad steals a gradient
    whose use count shows nobody else holds it).  A gradient that a backward formula returned
    for two inputs, one a hook kept, one the caller passed to backward(), a view whose base or
    storage something else holds, or memory owned by NumPy fails one of these and is copied.
    A view of a base that only it holds (a reshaped product) qualifies.  A device array's
    memory is its allocator's block (`allocator_owned`; imported memory, DLPack's, is not).
    Call it with the caller's local variable as the only other reference (as
    _probe_ref_counts does)."""
    d = grad._data
    storage = getattr(d, "storage", None)
    if storage is None or d.offset != 0 or d.storage_nbytes() != d.numel * d.itemsize:
        return False
    if getattr(storage, "owner", True) is not None and not _allocator_owned(d):
        return False                # memory from elsewhere (NumPy's, DLPack's)
    del d, storage
    global _SOLE_REFS
    if _SOLE_REFS is None:
        _SOLE_REFS = (_probe_ref_counts(False), _probe_ref_counts(True))
    counts = _ref_counts(grad)
    want = _SOLE_REFS[len(counts) > 3]
    return len(counts) == len(want) and all(c <= w for c, w in zip(counts, want))


def _store_grad(t, grad, create_graph, owned=False):
    """t.grad = grad the first time, then t.grad += grad (in place unless create_graph, as
    PyTorch: a grad made with create_graph keeps its history).  A new .grad gets t's strides
    when t is dense (PyTorch's layout contract), so t and t.grad can be updated together.
    owned: nothing else holds `grad` (see _sole_owner), so it becomes .grad without a copy
    when its strides are t's."""
    if create_graph:
        t._grad = grad if t._grad is None else t._grad + grad
        return
    grad = grad.detach()
    old = t._grad
    if old is None:
        if grad._data.strides == t._data.strides:
            t._grad = grad if owned else grad.clone()
        else:
            buf = _A.empty_like(t._data, t._data.dtype)
            _ew.copy_(buf, grad._data)
            t._grad = _wrap(buf)
    else:
        # in place even when `old` came from a create_graph backward: PyTorch keeps the .grad
        # object (its history is not extended: this backward records nothing)
        old += grad


def _leaf_grad(leaf, grad):
    """The gradient a leaf receives, after its hooks, in its shape, dtype and device."""
    for hook in list(getattr(leaf, "_hooks", None) or ()):
        r = hook(grad)
        if r is not None:
            grad = _hook_result(hook, grad, r)
    if grad._data.device != leaf._data.device:
        # a CPU scalar tensor used in a CUDA op gets its gradient back on the CPU, as in PyTorch
        grad = grad.to(leaf.device)
    return _conform(grad, leaf._data.shape, leaf._data.dtype, "AccumulateGrad", 0)


def _accumulate(leaf, grad, create_graph, owned=False):
    """AccumulateGrad: leaf.grad += grad, then the leaf's post-accumulate hooks."""
    _store_grad(leaf, grad, create_graph, owned)
    for hook in list(getattr(leaf, "_post_acc_hooks", None) or ()):
        hook(leaf)


def _conform(grad, tshape, dtype, node_name, index):
    """A gradient of shape tshape and dtype code `dtype`: sum a broadcast gradient back, cast
    the dtype, and raise PyTorch's error for a shape that cannot be right."""
    gshape = grad._data.shape
    if gshape != tshape:
        if not expandable_to(tshape, gshape):
            raise RuntimeError(f"Function {node_name} returned an invalid gradient at index {index} "
                               f"- got {list(gshape)} but expected shape compatible with {list(tshape)}")
        grad = sum_to(grad, tshape)
    if grad._data.dtype != dtype:
        from .. import _dtype
        grad = grad.to(_dtype.DTYPES[dtype])
    return grad


def run_backward(roots: Sequence[Tensor | GradientEdge], grad_roots: Sequence[Tensor | None],
                 retain_graph: bool, create_graph: bool,
                 inputs: Sequence[Tensor | GradientEdge] | None = None,
                 accumulate: bool = True) -> list[Tensor | None]:
    """Backpropagate grad_roots from the root tensors.

    Without `inputs`: accumulate into every leaf's .grad.  With `inputs`: only the graph
    leading to them runs; return the gradients reaching them, and (accumulate=True, as
    backward(inputs=...)) add them into their .grad, leaves and non-leaves alike."""
    root_edges = [edge_of(r) for r in roots]
    deps = _dependencies([n for n, _ in root_edges])
    buffers = {}
    for (node, nr), g in zip(root_edges, grad_roots):
        if node is not None:
            buf = buffers.get(node)
            if buf is None:
                buf = buffers[node] = [None] * node._num_outputs
            buf[nr] = g if buf[nr] is None else buf[nr] + g

    captures = needed = None
    if inputs is not None:
        captures = {}
        for i, t in enumerate(inputs):
            captures.setdefault(edge_of(t), []).append(i)
        needed = _needed([n for n, _ in root_edges], {n for n, _ in captures})
    captured = [None] * (len(inputs) if inputs is not None else 0)

    ready = [n for n in buffers if n not in deps]
    check_nan = anomaly._enabled
    add = operator.add if create_graph else _add_no_graph
    prev_mode = _state.enabled
    _state.enabled = create_graph
    prev_call = running.call    # hooks may ask what this call reaches (graph.BackwardCall)
    running.call = BackwardCall([n for n, _ in root_edges], needed, captures)
    node = None
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if node._special or captures is not None:
                # hooks, retain_grad, several outputs, leaves, or grad()'s captures
                if grads is None:
                    grads = [None] * node._num_outputs
                grads_in = _special_node(node, grads, create_graph, retain_graph, captures,
                                         captured, needed, inputs, accumulate)
                if grads_in is None:
                    continue
                if grads_in is _NOT_RUN:    # it keeps its saved tensors; only counts as done
                    for nxt, _ in node.next_functions:
                        if nxt is not None:
                            _count_down(nxt, deps, ready)
                    continue
            else:
                # the common case: one output, no hooks
                g = None if grads is None else grads[0]
                if g is None:
                    grads_in = (None,) * len(node.next_functions)
                else:
                    grads_in = node.backward(g)
                    if type(grads_in) is not tuple:
                        grads_in = tuple(grads_in) if type(grads_in) is list else (grads_in,)
                    if len(grads_in) != len(node.next_functions):
                        _wrong_count(node, grads_in)
            if check_nan:
                anomaly.check_nan(node, grads_in)
            if not retain_graph:
                node.release()
            for (nxt, nr), g in zip(node.next_functions, grads_in):
                if nxt is None:
                    continue
                if g is not None:
                    buf = buffers.get(nxt)
                    if buf is None:
                        buf = buffers[nxt] = [None] * nxt._num_outputs
                        buf[nr] = g
                    elif buf[nr] is None:
                        buf[nr] = g
                    else:
                        buf[nr] = add(buf[nr], g)
                _count_down(nxt, deps, ready)
            g = grads_in = None     # a leaf's gradient must be referenced only by its buffer
    except Exception as err:
        if anomaly._enabled and node is not None:
            anomaly.annotate(node, err)
        raise
    finally:
        _state.enabled = prev_mode
        running.call = prev_call
    return captured


def _add_no_graph(a, b):
    """a + b for two gradients when nothing is recorded (the kernel call, without the op's
    Python dispatch: the engine sums gradients a lot)."""
    if a._data.device == "cpu" and b._data.device == "cpu":
        return _wrap(_ew.binary(_EW_ADD, a._data, b._data, None, 1.0))
    return a + b


def _wrong_count(node, grads_in):
    raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients "
                       f"(expected {len(node.next_functions)}, got {len(grads_in)})")


def _special_node(node, grads, create_graph, retain_graph, captures, captured, needed, inputs,
                  accumulate):
    """Run a node off the fast path; returns its input gradients, or None when it has nothing
    to pass on (a leaf's accumulator), or _NOT_RUN for a node grad() does not need."""
    if node._tensor_hooks is not None or node._retained is not None:
        grads = _run_tensor_hooks(node, grads)
    if node._is_accumulator:
        g = grads[0]
        if g is not None:
            if captures is None:
                grads[0] = None                # so that g is this frame's only reference
                g = _leaf_grad(node.variable, g)
                if node._pre_hooks:
                    g = _accumulator_pre_hooks(node, g)
                owned = not create_graph and _sole_owner(g)     # before g is also an argument
                _accumulate(node.variable, g, create_graph, owned)
                if node._hooks:
                    _accumulator_hooks(node, g)
            elif (node, 0) in captures:
                g = _leaf_grad(node.variable, g)
                if accumulate and node._pre_hooks:      # backward(inputs=...) runs the node
                    g = _accumulator_pre_hooks(node, g)
                _capture(captures[(node, 0)], g, captured, inputs, accumulate, create_graph)
                if accumulate and node._hooks:
                    _accumulator_hooks(node, g)
        return None
    if captures is not None:
        for nr, g in enumerate(grads):
            idx = captures.get((node, nr))
            if idx is not None and g is not None:
                _capture(idx, g, captured, inputs, accumulate, create_graph)
        if node not in needed:
            return _NOT_RUN
    return _call(node, grads)


def _accumulator_pre_hooks(node, g):
    """A leaf's AccumulateGrad node's pre-hooks (grad_fn.next_functions[..][0].register_prehook):
    fn((grad,)) before the gradient is accumulated, which may return a replacement (PyTorch's
    order: after the leaf's tensor hooks)."""
    for hook in list(node._pre_hooks):
        r = hook((g,))
        if r is not None:
            (new,) = r
            if new is not None:
                g = _hook_result(hook, g, new)
    return g


def _accumulator_hooks(node, g):
    """Its hooks: fn((), (grad,)) once the gradient is in .grad (an AccumulateGrad has no
    inputs to pass a gradient to)."""
    for hook in list(node._hooks):
        hook((), (g,))


def _capture(indices, g, captured, inputs, accumulate, create_graph):
    """The gradient reaching input tensors (one tensor may be listed more than once)."""
    for i in indices:
        captured[i] = g
    if accumulate:
        t = inputs[indices[0]]
        if t.grad_fn is None:
            _accumulate(t, g, create_graph)
        else:
            _store_grad(t, g, create_graph)


def _count_down(nxt, deps, ready):
    """One of nxt's dependencies is done: nxt is ready once none is left."""
    d = deps[nxt] - 1
    if d:
        deps[nxt] = d
    else:
        del deps[nxt]
        ready.append(nxt)


def _call(node, grads):
    """Run one node's backward with its pre-hooks and hooks; returns one gradient per input."""
    if node._pre_hooks:
        for hook in list(node._pre_hooks):
            r = hook(tuple(grads))
            if r is not None:
                grads = list(r)
    n_in = len(node.next_functions)
    if node._num_outputs == 1:
        g = grads[0]
        grads_in = (None,) * n_in if g is None else node.backward(g)
    elif all(g is None for g in grads):
        grads_in = (None,) * n_in
    else:
        grads_in = node.backward(*(_materialize(node, grads) if node._materialize else grads))
    if type(grads_in) is not tuple:
        grads_in = tuple(grads_in) if type(grads_in) is list else (grads_in,)
    if len(grads_in) != n_in:
        _wrong_count(node, grads_in)
    if node._hooks:
        for hook in list(node._hooks):
            r = hook(grads_in, tuple(grads))
            if r is not None:
                grads_in = tuple(r)
    return grads_in


def _tensors(x, name, edges=False):
    """x as a tuple of tensors (and, with edges, of GradientEdges: autograd.grad takes both)."""
    kinds = (Tensor, GradientEdge) if edges else (Tensor,)
    if isinstance(x, kinds):
        return (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, kinds) for t in x):
        return tuple(x)
    raise TypeError(f"{name} must be a Tensor or a sequence of Tensors"
                    + (" or GradientEdges" if edges else ""))


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
        if type(o) is GradientEdge:          # no tensor to check against: the gradient as given
            if g is None:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            out.append(g if create_graph else g.detach())
            continue
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
        elif g._data.device != o._data.device:
            raise RuntimeError(f"invalid gradient at index {i} - expected device {o.device} but "
                               f"got {g.device}")
        elif not create_graph:
            g = g.detach()
        out.append(g)
    if len(out) < len(outputs):
        raise RuntimeError(f"got {len(outputs)} tensors and {len(out)} gradients")
    return out


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
             retain_graph: bool | None = None, create_graph: bool = False,
             inputs: Tensor | GradientEdge | Sequence[Tensor | GradientEdge] | None = None) -> None:
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


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) * gradient into every leaf's .grad (see autograd.backward).
    gradient may be omitted only for a one-element tensor."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
Tensor.backward = _tensor_backward
