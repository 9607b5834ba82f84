"""The backward graph.

Every differentiable op that sees an input requiring grad (with grad mode on) records one
Node: the node keeps what its backward formula needs (saved tensors, with the version they had)
and `next_functions`, one (node, input_nr) pair per input, pointing at the node that made that
input (or at the AccumulateGrad node of a leaf).  Outputs point back at the node through
`tensor.grad_fn`.  The engine (engine.py) walks this graph from the root.

Writing a backward formula (the pattern every op family follows):

    class ExpBackward0(Node):
        def backward(self, g):                      # one gradient per output
            return (g * self.saved("result"),)      # one gradient (or None) per input

    node = ExpBackward0()
    node.save_output(result=out)                    # node.save(x=inp) for inputs
    record(node, (inp,), out)

Formulas are written with Tensor ops, so they are differentiable again (create_graph).

Views: every view op sets `out._base` (PyTorch's name; the input's own base for a view of a
view), recorded or not; an output of a recorded op that shares memory with the op's first
tensor input is marked a view of it here too.  An in-place write through a view rewrites the
base's history (elementwise_grad.rebase_inplace: CopySlices), and a view whose memory changed
since its history was set gets a fresh history from its base when next used (edge).

Also PyTorch's torch.autograd.graph API: saved_tensors_hooks / save_on_cpu /
allow_mutation_on_saved_tensors / disable_saved_tensors_hooks (in pack and unpack, below),
register_multi_grad_hook (which asks the engine's current BackwardCall which nodes it reaches),
increment_version."""
from __future__ import annotations

import collections
import contextlib
import threading
import weakref
from typing import TYPE_CHECKING

from . import anomaly as _anomaly
from .grad_mode import _state, no_grad

if TYPE_CHECKING:
    from collections.abc import Callable, Container, Iterable, Iterator, Sequence
    from typing import Any

    from .._tensor import Tensor

_NO_EDGE = (None, 0)


def inplace_records(self, *others) -> bool:
    """Whether an in-place op on `self` must go through the graph (rebase its history): grad
    mode is on and self, an operand, or the base self is a view of requires grad.  The last
    case matters for a view taken while nothing recorded: writing through it still changes a
    tensor that is part of a graph.  Under no_grad: whether one of them carries a tangent of
    an open forward AD level (see needs_grad)."""
    if not _state.enabled:
        return forward_ad is not None and forward_ad.any_tangent((self, self._base) + others)
    if self._requires_grad:
        return True
    base = self._base
    if base is not None and base._requires_grad:
        return True
    for t in others:
        if getattr(t, "_requires_grad", False):
            return True
    return False


def needs_grad(*tensors) -> bool:
    """Whether an op over these inputs must record a node: grad mode on and an input requiring
    grad, or (under no_grad) a forward AD level open and an input carrying a tangent, which
    travels on the node.  The ops call this on their fast path, so it stays small."""
    if not _state.enabled:
        return forward_ad is not None and forward_ad.any_tangent(tensors)
    for t in tensors:
        if getattr(t, "_requires_grad", False):
            return True
    return False


# ---- saved tensors ------------------------------------------------------------------------------
# A saved input is a tuple (tensor, array, version, its grad_fn when saved): it keeps its Tensor
# (whose grad_fn is the history a double backward follows).  A saved output is (None, array,
# version, output_nr): an op's own output keeps only its array
# (the node itself is its grad_fn), so a node never holds the tensor that holds it: no reference
# cycle, and the graph is freed as soon as nothing uses it.  Tuples, not objects: this runs once
# per recorded op.

def pack(t: Tensor | None, is_output: bool) -> tuple[Any, ...] | None:
    """The saved form of tensor t (None stays None)."""
    if t is None:
        return None
    arr = t._data
    if is_output:
        entry = (None, arr, arr.storage.version, getattr(t, "_output_nr", 0))
    else:
        entry = (t, arr, arr.storage.version, t.grad_fn)
    if saved_hooks_in_use:
        return _through_pack_hook(entry)
    return entry


def _dtype_name(arr):
    from .. import _dtype
    return str(_dtype.DTYPES[arr.dtype])


def unpack(node: Node, name: str, entry: tuple[Any, ...]) -> Tensor:
    """The tensor of a saved entry, after checking nothing modified it in place since."""
    t, arr, version, extra = entry
    if arr.storage.version != version:
        if arr is _PACKED_BY_HOOK:
            return _through_unpack_hook(node, t)
        producer, nr = (node, extra) if t is None else (extra, getattr(t, "_output_nr", 0))
        which = f", which is output {nr} of {producer.name()}," if producer is not None else ""
        raise RuntimeError(
            f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{_dtype_name(arr)} {list(arr.shape)}]{which} is at version "
            f"{arr.storage.version}; expected version {version} instead. Hint: enable anomaly "
            f"detection to find the operation that failed to compute its gradient, with "
            f"torchlite.autograd.set_detect_anomaly(True).")
    if t is None:
        t = _wrap(arr, True)
        t.grad_fn = node
        t._output_nr = extra
    return t


_FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
          "backward through the graph a second time or if you need to access saved tensors after "
          "calling backward.")


# ---- saved tensor hooks -------------------------------------------------------------------------
# saved_tensors_hooks(pack_hook, unpack_hook): while the context is active in a thread, every
# tensor a node saves goes through pack_hook at once (its result is what the node keeps) and
# through unpack_hook when backward needs it.  A packed entry keeps the tuple form, with a
# record in the tensor slot and _PACKED_BY_HOOK in the array slot, whose version never matches:
# unpack's one version check sends these entries to _through_unpack_hook, so saving and
# unpacking cost nothing extra while no hook is in use (the only added test on the hot path is
# `if saved_hooks_in_use`, in pack and in the ops that build entries inline).  As in PyTorch,
# the hook owns the value: no in-place check at unpack.

saved_hooks_in_use = []         # one item per context active in any thread (a cheap global test)


class _SavedHooksState(threading.local):
    stack = ()                  # (pack_hook, unpack_hook) pairs of this thread, innermost last
    disabled = None             # the message of an active disable_saved_tensors_hooks


_saved_hooks = _SavedHooksState()


class _NeverCurrent:
    __slots__ = ()
    version = None              # no saved version (an int) equals it


class _PackedByHook:
    """The array slot of an entry a pack hook took (see above)."""
    __slots__ = ()
    storage = _NeverCurrent()


_PACKED_BY_HOOK = _PackedByHook()


class _HookPacked:
    """What a node keeps of a tensor a pack hook took: the hook's result, the unpack hook, and
    the history to give the unpacked tensor (so a double backward still reaches the original
    graph: its grad_fn, or the accumulator of a leaf)."""

    __slots__ = ("packed", "unpack_hook", "is_output", "output_nr", "requires_grad", "grad_fn",
                 "accumulator")


def _through_pack_hook(entry):
    """The hooked form of a raw saved entry, if this thread has hooks (else entry itself)."""
    stack = _saved_hooks.stack
    if not stack:
        return entry                # the hooks in use belong to another thread
    pack_hook, unpack_hook = stack[-1]
    t, arr, version, extra = entry
    rec = _HookPacked()
    rec.unpack_hook = unpack_hook
    rec.is_output = t is None
    rec.grad_fn = rec.accumulator = None
    if t is None:
        # an op's own output: the hook gets an alias without history, so a hook that keeps
        # it makes no node -> tensor -> node cycle (PyTorch also hands over a new tensor)
        given = _wrap(arr, True)
        rec.output_nr, rec.requires_grad = extra, True
    else:
        given = t
        rec.output_nr, rec.requires_grad, rec.grad_fn = getattr(t, "_output_nr", 0), t._requires_grad, extra
        if extra is None and t._requires_grad:
            rec.accumulator = grad_accumulator(t)
    with no_grad():                 # PyTorch runs pack hooks without recording
        rec.packed = pack_hook(given)
    if arr.storage.version != version:
        raise RuntimeError("A saved tensor pack hook is modifying its input in place. Tensors provided "
                           "as input to pack hook cannot be modified by in-place operations as this "
                           "can lead to unexpected side-effects. Please open an issue if you need to "
                           "perform in-place operations on the input to a pack hook.")
    return (rec, _PACKED_BY_HOOK, -1, None)


def hook_saved(saved: dict[str, Any]) -> None:
    """Pass the raw entries of a node's saved dict through this thread's pack hook (for ops
    that build entries inline rather than through pack; call it when saved_hooks_in_use)."""
    for k, entry in saved.items():
        if entry is not None and entry[1] is not _PACKED_BY_HOOK:
            saved[k] = _through_pack_hook(entry)


def _through_unpack_hook(node, rec):
    from .._tensor import Tensor
    value = rec.unpack_hook(rec.packed)
    if not isinstance(value, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result "
                        f"of type {type(value).__name__}")
    out = _wrap(value._data, rec.requires_grad)
    if rec.is_output:
        out.grad_fn, out._output_nr = node, rec.output_nr
    elif rec.grad_fn is not None:
        out.grad_fn, out._output_nr = rec.grad_fn, rec.output_nr
    elif rec.accumulator is not None:
        out._grad_acc = weakref.ref(rec.accumulator)
    return out


class saved_tensors_hooks:
    """Context manager: pack_hook(tensor) -> anything runs on every tensor saved for backward
    while it is active (in this thread), and unpack_hook(that) -> Tensor when backward uses it.
    Nested contexts: the innermost pair applies."""

    def __init__(self, pack_hook: Callable[[Tensor], Any], unpack_hook: Callable[[Any], Tensor]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _saved_hooks.disabled is not None:
            raise RuntimeError(_saved_hooks.disabled)
        _saved_hooks.stack = _saved_hooks.stack + ((self.pack_hook, self.unpack_hook),)
        saved_hooks_in_use.append(self)

    def __exit__(self, *exc) -> None:
        _saved_hooks.stack = _saved_hooks.stack[:-1]
        saved_hooks_in_use.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors live in CPU memory (pinned with pin_memory, when CUDA is there) and go
    back to their device when backward uses them: GPU memory for activations traded for
    copies.  A CPU tensor is kept as it is."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(t):
            if not pin_memory:
                return (t.device, t.cpu())
            from .._dispatch import cuda_available
            packed = t.new_empty(t.size(), device="cpu", pin_memory=cuda_available())
            packed.copy_(t)
            return (t.device, packed)

        def unpack_from_cpu(packed):
            device, t = packed
            return t.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _AllowMutationOnSavedContext:
    """The object allow_mutation_on_saved_tensors yields (PyTorch's name); `active` while the
    context is open."""

    def __init__(self):
        self.active = True


_mutation_context = threading.local()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """Inside, tensors saved for backward may be modified in place afterwards: each is kept
    as a copy made when it is saved (PyTorch copies it when it is first modified: the same
    results, for more memory), so backward sees the values the forward used instead of
    raising the version error.  Backward of a graph recorded here must run inside the same
    context (AssertionError otherwise, as in PyTorch); the contexts do not nest."""
    if getattr(_mutation_context, "open", False):
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        return ctx, t.clone()             # clone is recorded: higher-order gradients still flow

    def unpack(packed):
        owner, t = packed
        if not owner.active:
            raise AssertionError("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                                 "context in which the graph was originally recorded.")
        return t

    _mutation_context.open = True
    try:
        with saved_tensors_hooks(pack, unpack):
            yield ctx
    finally:
        ctx.active = False
        _mutation_context.open = False


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str) -> Iterator[None]:
    """Inside, entering saved_tensors_hooks (or being inside one) raises
    RuntimeError(error_message): for code whose saved tensors must not be intercepted."""
    prev = _saved_hooks.disabled
    if _saved_hooks.stack:
        raise RuntimeError(error_message)
    _saved_hooks.disabled = error_message
    try:
        yield
    finally:
        _saved_hooks.disabled = prev


class Node:
    """One recorded op.  Subclasses implement backward(*grad_outputs) -> one gradient (or
    None) per input, written with Tensor ops, so it is itself differentiable.

    The class attributes are the defaults; a node sets only what it uses (recording runs once
    per op, so a node costs as little as possible)."""

    next_functions = ()
    _saved = None               # {name: saved entry} (see pack)
    _released = False
    _hooks = ()                 # fn(grad_inputs, grad_outputs) after backward
    _pre_hooks = ()             # fn(grad_outputs) before backward
    _tensor_hooks = None        # {output_nr: [fn(grad)]}: hooks of the non-leaf outputs
    _retained = None            # {output_nr: weakref to the output}: retain_grad()
    _num_outputs = 1
    _out_meta = None            # multi-output nodes: (shape, dtype, device) per output
    _materialize = True         # backward gets zeros (not None) for outputs without a gradient
    _trace = None               # the forward stack, kept in anomaly mode
    _is_accumulator = False
    _special = False            # the engine's slow path: hooks, retain_grad, several outputs

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    @property
    def metadata(self) -> dict[str, Any]:
        m = self.__dict__.get("_metadata")
        if m is None:
            m = self._metadata = {}
        return m

    def __getattr__(self, attr: str) -> Tensor | None:
        # PyTorch's grad_fn._saved_<name>: the saved tensor `name` (only called for attributes
        # not found the normal way)
        if attr.startswith("_saved_") and attr != "_saved_":
            key = attr[len("_saved_"):]
            if self._released or (self._saved is not None and key in self._saved):
                return self.saved(key)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{attr}'")

    # -- saved tensors ---------------------------------------------------------------------
    def save(self, **tensors) -> None:
        """Keep inputs of the op for backward (checked for in-place changes when used)."""
        saved = self._saved
        if saved is None:
            saved = self._saved = {}
        watch = _state.alias_watch
        for k, t in tensors.items():
            saved[k] = pack(t, False)
            if watch is not None and t is watch[0]:
                watch[1].append((self, k))

    def save_output(self, **tensors) -> None:
        """Keep outputs of the op itself for backward (held as arrays: no reference cycle)."""
        saved = self._saved
        if saved is None:
            saved = self._saved = {}
        for k, t in tensors.items():
            saved[k] = pack(t, True)

    def saved(self, name: str) -> Tensor | None:
        """A saved tensor, version-checked; raises once the graph has been freed."""
        if self._released:
            raise RuntimeError(_FREED)
        entry = self._saved[name]
        return None if entry is None else unpack(self, name, entry)

    def release(self) -> None:
        """Free the saved tensors (after backward without retain_graph)."""
        if self._saved is not None:
            self._saved = None
            self._released = True

    # -- hooks -------------------------------------------------------------------------------
    def register_hook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """fn(grad_inputs, grad_outputs) runs after this node's backward; it may return
        replacement grad_inputs."""
        if not self._hooks:
            self._hooks = []
        self._special = True
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn: Callable[..., Any]) -> RemovableHandle:
        """fn(grad_outputs) runs before this node's backward; it may return replacements."""
        if not self._pre_hooks:
            self._pre_hooks = []
        self._special = True
        self._pre_hooks.append(fn)
        return RemovableHandle(self._pre_hooks, fn)

    def backward(self, *grads) -> tuple[Tensor | None, ...]:
        raise NotImplementedError(f"{self.name()} has no backward")


class RemovableHandle:
    """What register_hook returns: handle.remove() unregisters the hook."""

    __slots__ = ("_lst", "_fn")

    def __init__(self, lst: list[Callable[..., Any]], fn: Callable[..., Any]) -> None:
        self._lst, self._fn = lst, fn

    def remove(self) -> None:
        for i, f in enumerate(self._lst):
            if f is self._fn:
                del self._lst[i]
                return

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


_Handle = RemovableHandle


class AccumulateGrad(Node):
    """The end of the graph for a leaf tensor: the engine adds the gradient into leaf.grad."""

    _is_accumulator = True
    _special = True

    def __init__(self, variable: Tensor) -> None:
        self.variable = variable

    def backward(self, grad: Tensor | None) -> tuple[Tensor | None, ...]:
        return ()


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The AccumulateGrad node of leaf t (one per leaf, created on first use; the tensor holds
    it weakly, so it lives as long as some graph points at it)."""
    ref = getattr(t, "_grad_acc", None)
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._grad_acc = weakref.ref(node)
    return node


# ---- the running backward, as hooks see it ------------------------------------------------------
class BackwardCall:
    """One run of the engine (engine.run_backward makes it and sets it as the thread's
    current call while it runs): enough to tell which nodes it will give a gradient to, for
    hooks that must know how many of their tensors to wait for (register_multi_grad_hook)."""

    __slots__ = ("roots", "needed", "captures", "_reached", "hook_state")

    def __init__(self, roots: Sequence[Node | None], needed: Container[Node] | None,
                 captures: dict[tuple[Node, int], Any] | None) -> None:
        self.roots = roots          # the root nodes
        self.needed = needed        # grad(): the nodes that run (None: all that are reached)
        self.captures = captures    # grad(): {(node, nr): input indices} (None for backward)
        self._reached = None
        self.hook_state = {}        # per-call state of multi-grad hooks (freed with the call)

    def will_receive(self, node: Node) -> bool:
        """Whether this call delivers a gradient to node (so its tensors' hooks run): PyTorch's
        _will_engine_execute_node.  Walks the graph once per call, on first use."""
        reached = self._reached
        if reached is None:
            reached = self._reached = set()
            stack = [n for n in self.roots if n is not None]
            reached.update(stack)
            while stack:
                n = stack.pop()
                if n._is_accumulator or (self.needed is not None and n not in self.needed):
                    continue        # its backward does not run: nothing flows on from it
                for nxt, _ in n.next_functions:
                    if nxt is not None and nxt not in reached:
                        reached.add(nxt)
                        stack.append(nxt)
        if node not in reached:
            return False
        # a leaf's hooks run under grad() only when it is one of the inputs
        return not node._is_accumulator or self.captures is None or (node, 0) in self.captures


class _Running(threading.local):
    call = None                 # this thread's innermost BackwardCall


running = _Running()


def grad_fn_or_accumulator(t: Tensor) -> Node:
    """The node whose gradient is t's: its grad_fn, or its AccumulateGrad if it is a leaf."""
    if t.grad_fn is not None:
        return t.grad_fn
    if not t._requires_grad:
        raise AssertionError("Expected gradient function to be set")
    return grad_accumulator(t)


class _MultiHandle:
    """The handle of register_multi_grad_hook: remove() unregisters every tensor's hook."""

    __slots__ = ("handles",)

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors: Iterable[Tensor], fn: Callable[..., Any], *,
                             mode: str = "all") -> _MultiHandle:
    """One hook over several tensors.  mode="all": fn(grads) runs once per backward call,
    after the gradients of all the tensors that call reaches are computed (grads: one per
    tensor, None for those it does not reach).  mode="any": fn(grad) runs on the first of
    their gradients computed in each call.  Returns a handle whose remove() unregisters it."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    key = object()                  # this registration's slot in each call's hook_state
    if mode == "any":
        def any_hook(grad):
            state = running.call.hook_state
            if key not in state:
                state[key] = True
                fn(grad)
        return _MultiHandle(tuple(t.register_hook(any_hook) for t in tensors if t.requires_grad))

    nodes = [grad_fn_or_accumulator(t) for t in tensors]

    def all_hook_for(i):
        def all_hook(grad):
            call = running.call
            state = call.hook_state.get(key)
            if state is None:       # first gradient in this call: how many to wait for
                state = call.hook_state[key] = [sum(map(call.will_receive, nodes)), [None] * len(nodes)]
            state[1][i] = grad
            state[0] -= 1
            if state[0] == 0:
                fn(state[1])
        return all_hook

    return _MultiHandle(tuple(t.register_hook(all_hook_for(i)) for i, t in enumerate(tensors)))


def increment_version(tensor: Tensor | Iterable[Tensor]) -> None:
    """Bump the version counter of tensor (or of each of several), as an in-place write
    would: for code that changes memory behind autograd's back."""
    from .._tensor import Tensor
    for t in ((tensor,) if isinstance(tensor, Tensor) else tensor):
        t._bump_version()


def reached_leaves(nodes: Iterable[Node | None]) -> Iterator[Tensor]:
    """The leaf tensors (requiring grad) whose accumulators the backward graph from `nodes`
    reaches, each once, as a walk finds them."""
    stack, seen = [n for n in nodes if n is not None], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, "_is_accumulator", False):
            yield node.variable
            continue
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None and id(nxt) not in seen)


def edge(t: Tensor | None) -> tuple[Node | None, int]:
    """(node, input_nr) for an input tensor: its grad_fn and output slot, its accumulator if it
    is a leaf requiring grad, or (None, 0) if no gradient flows to it."""
    if t is None or not t._requires_grad:
        return _NO_EDGE
    fn = t.grad_fn
    if fn is not None:
        # (a view made under no_grad that an op then recorded onto has no _view_version)
        if t._base is not None and getattr(t, "_view_version", None) not in (None, t._data.storage.version):
            return refresh_view(t)
        return (fn, getattr(t, "_output_nr", 0))
    return (grad_accumulator(t), 0)


# torch.autograd.graph.GradientEdge: a place in the graph a gradient flows into (a node and which
# of its outputs), usable where autograd.grad takes tensors
GradientEdge = collections.namedtuple("GradientEdge", ("node", "output_nr", "ownership_token"),
                                      defaults=(None,))
GradientEdge.__doc__ = ("GradientEdge(node, output_nr): the gradient flowing into output "
                        "output_nr of node; autograd.grad takes it for an input or an output.")


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The GradientEdge a tensor's gradient flows into: its grad_fn and output slot, or the
    AccumulateGrad node of a leaf.  autograd.grad(outputs, edge) is then the gradient with
    respect to that tensor as it was, even after the tensor object is modified or gone."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = edge(tensor)
    return GradientEdge(node, nr)


def edge_of(x: Tensor | GradientEdge) -> tuple[Node | None, int]:
    """edge() for a tensor, or the (node, output_nr) of a GradientEdge."""
    return (x.node, x.output_nr) if type(x) is GradientEdge else edge(x)


def fresh_view_of_base(t: Tensor) -> Tensor:
    """A new alias of view t's memory whose history is a view of its base's current history
    (a node of its own: no hooks, no retain_grad entries of t's older histories)."""
    from .grad_mode import enable_grad
    arr = t._data
    with enable_grad():
        return t._base.as_strided(arr.shape, arr.strides, arr.offset)


def refresh_view(t: Tensor) -> tuple[Node | None, int]:
    """A view whose memory was written in place since its history was set (through its base
    or another view of it): its history becomes a view of the base's current history, as
    PyTorch regenerates a view's grad_fn.  Returns the view's edge."""
    v = fresh_view_of_base(t)
    old_fn, old_nr = t.grad_fn, getattr(t, "_output_nr", 0)
    t.grad_fn, t._output_nr, t._requires_grad = v.grad_fn, 0, v._requires_grad
    t._view_version = t._data.storage.version
    move_retain_grad(t, old_fn, old_nr, v.grad_fn, 0)
    return _NO_EDGE if v.grad_fn is None else (v.grad_fn, 0)


def move_retain_grad(t: Tensor, old_fn: Node | None, old_nr: int, new_fn: Node | None, new_nr: int) -> None:
    """retain_grad follows a tensor whose history changed (in place, or a view refreshed) to
    its new history: PyTorch's .grad is the gradient of the tensor's latest version.  Tensor
    hooks stay where they were (they see the gradient of the value they were registered on)."""
    if not getattr(t, "_retains_grad", False) or new_fn is old_fn:
        return
    if old_fn is not None and old_fn._retained is not None:
        ref = old_fn._retained.get(old_nr)
        if ref is not None and ref() is t:
            del old_fn._retained[old_nr]
    if new_fn is not None:
        if new_fn._retained is None:
            new_fn._retained = {}
        new_fn._special = True
        new_fn._retained[new_nr] = weakref.ref(t)


def _mark_views(inputs, outs):
    """Outputs that share memory with the first tensor input are views of it (of its base):
    an in-place change through them must update the base's history (elementwise_grad)."""
    src = None
    for t in inputs:
        if t is not None:
            src = t
            break
    if src is None:
        return
    storage = src._data.storage
    for o in outs:
        if o is not None and o is not src and o.grad_fn is not None and o._data.storage is storage:
            base = getattr(src, "_base", None)
            o._base = src if base is None else base
            o._view_version = storage.version


def record(node: Node, inputs: Sequence[Tensor | None],
           outputs: Tensor | Sequence[Tensor | None]) -> Tensor | Sequence[Tensor | None]:
    """Link node into the graph: its next_functions come from inputs (None for a non-tensor
    input), and each floating output (a Tensor, or a tuple/list of them, None allowed) gets
    node as grad_fn.  Returns the outputs."""
    node.next_functions = tuple([edge(t) for t in inputs])
    if type(outputs) is tuple or type(outputs) is list:
        node._num_outputs = len(outputs)
        if len(outputs) != 1:
            node._special = True
        meta = []
        for i, o in enumerate(outputs):
            if o is not None and o._data.dtype >= 6:
                o._requires_grad = True
                o.grad_fn = node
                o._output_nr = i
                meta.append((o._data.shape, o.dtype, o.device))
            else:
                meta.append(None)
        node._out_meta = meta
        _mark_views(inputs, outputs)
    elif outputs._data.dtype >= 6:          # integer and bool outputs never require grad
        outputs._requires_grad = True
        outputs.grad_fn = node
        outputs._output_nr = 0
        _mark_views(inputs, (outputs,))
    if _anomaly._enabled:
        node._trace = _anomaly.current_trace()
    if forward_ad is not None:              # a forward AD level is open
        forward_ad.propagate(node, inputs, outputs)
    return outputs


# the torchlite.autograd.forward_ad module while a forward AD level is open, else None: every
# place that links a node to its outputs (record, and the elementwise and loss recorders that
# do it inline) hands the node to forward_ad.propagate, which gives the outputs tangents.
# Under no_grad an op whose input carries a tangent records all the same (needs_grad,
# inplace_records and the inline checks `x._requires_grad and (enabled or tangent)` say so):
# the tangents travel on the nodes, so forward AD works in either grad mode.
forward_ad = None


def sum_to(grad: Tensor, shape: Sequence[int]) -> Tensor:
    """Reduce a gradient back to `shape` after broadcasting (sum over the broadcast dims)."""
    shape = tuple(shape)
    gshape = grad._data.shape
    if gshape == shape:
        return grad
    lead = len(gshape) - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1]
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def expandable_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` broadcasts to `target` (so a gradient of `target` sums back to it)."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


# ---- declaring nodes ----------------------------------------------------------------------------
_NODE_TYPES = {}


def node_type(name: str, base: type[Node] | None = None) -> type[Node]:
    """The Node subclass named `name` (PyTorch's name for the op's node, e.g. 'ExpBackward0',
    which grad_fn shows) deriving from base (Node by default): made once per (name, base), so
    a family whose ops share one backward gives each op its own name."""
    base = Node if base is None else base
    cls = _NODE_TYPES.get((name, base))
    if cls is None:
        cls = _NODE_TYPES[(name, base)] = type(name, (base,), {})
    return cls


def new_node(cls: type[Node], **attrs) -> Node:
    """An instance of cls with attrs set (the constants its backward reads)."""
    node = cls()
    node.__dict__.update(attrs)
    return node


class NotDifferentiable(Node):
    """The node of an op with no derivative (heaviside, unique, histogram, LU's pivots...):
    backward through it raises, as PyTorch's does, so a missing formula is an error and never
    a silently missing gradient."""

    def backward(self, *grads) -> tuple[Tensor | None, ...]:
        raise RuntimeError(f"the derivative for '{self.op}' is not implemented.")


def record_not_differentiable(op: str, inputs: Sequence[Tensor | None],
                              outputs: Tensor | Sequence[Tensor | None],
                              name: str | None = None) -> Tensor | Sequence[Tensor | None]:
    """Record a NotDifferentiable node for op over inputs; its name is `name` or op's
    PyTorch-style 'OpBackward0'.  Returns the outputs."""
    if name is None:
        name = "".join(p.capitalize() for p in op.replace(".", "_").split("_")) + "Backward0"
    return record(new_node(node_type(name, NotDifferentiable), op=op), inputs, outputs)


# Tensor and autograd's core are one layer: _tensor imports autograd only inside functions
# (backward, register_hook), so this module-level import at the end closes no loop at import.
from .._tensor import _wrap  # noqa: E402
