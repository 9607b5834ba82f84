"""The backward graph.

Every differentiable op that sees an input requiring grad (with grad mode on) records one
Node: the node keeps what its backward formula needs (saved tensors, with the version they had)
and `next_functions`, one (node, input_nr) pair per input, pointing at the node that made that
input (or at the AccumulateGrad node of a leaf).  Outputs point back at the node through
`tensor.grad_fn`.  The engine (engine.py) walks this graph from the root."""
import weakref

from .grad_mode import _state


def needs_grad(*tensors):
    """Whether an op over these inputs must record a node (grad mode on, an input requiring
    grad).  The ops call this on their fast path, so it stays small."""
    if not _state.enabled:
        return False
    for t in tensors:
        if getattr(t, "_requires_grad", False):
            return True
    return False


class SavedTensor:
    """A tensor a backward formula needs, with the version it had when saved.  An op's own
    output is kept as its array only (the node itself is its grad_fn), so a node never holds
    the tensor that holds it: no reference cycle, and the graph frees as soon as it is unused."""

    __slots__ = ("data", "version", "tensor", "output_nr")

    def __init__(self, t, node, is_output):
        self.version = t._version
        if is_output:
            self.data, self.tensor, self.output_nr = t._data, None, getattr(t, "_output_nr", 0)
        else:
            self.data, self.tensor, self.output_nr = None, t, 0

    def unpack(self, node, name):
        from .._tensor import _wrap
        t = self.tensor
        if t is None:
            t = _wrap(self.data, True)
            t.grad_fn = node
            t._output_nr = self.output_nr
            cur = self.data.storage.version
        else:
            cur = t._version
        if cur != self.version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.dtype} {list(t.shape)}], which is {name} of "
                f"{node.name()}, is at version {cur}; expected version {self.version} instead. "
                f"Hint: the backtrace further above shows the operation that failed to compute "
                f"its gradient. The variable in question was changed in there or anywhere later.")
        return t


class Node:
    """One recorded op.  Subclasses implement backward(*grad_outputs) -> one gradient (or
    None) per input, written with Tensor ops, so it is itself differentiable."""

    def __init__(self):
        self.next_functions = ()
        self._saved = {}
        self._released = False
        self._hooks = []
        self._pre_hooks = []
        self._num_outputs = 1
        self._trace = None          # the forward stack, kept in anomaly mode

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"

    # -- saved tensors ---------------------------------------------------------------------
    def save(self, **tensors):
        """Keep inputs of the op for backward (checked for in-place changes when used)."""
        for k, t in tensors.items():
            self._saved[k] = None if t is None else SavedTensor(t, self, False)

    def save_output(self, **tensors):
        for k, t in tensors.items():
            self._saved[k] = SavedTensor(t, self, True)

    def saved(self, name):
        if self._released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.")
        s = self._saved[name]
        return None if s is None else s.unpack(self, name)

    def release(self):
        self._saved = {}
        self._released = True

    # -- hooks -------------------------------------------------------------------------------
    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) may return replacement grad_inputs."""
        self._hooks.append(fn)
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        self._pre_hooks.append(fn)
        return _Handle(self._pre_hooks, fn)

    def backward(self, *grads):
        raise NotImplementedError(f"{self.name()} has no backward")


class _Handle:
    def __init__(self, lst, fn):
        self._lst, self._fn = lst, fn

    def remove(self):
        if self._fn in self._lst:
            self._lst.remove(self._fn)


class AccumulateGrad(Node):
    """The end of the graph for a leaf tensor: adds the gradient into leaf.grad."""

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def backward(self, grad):
        return ()


def grad_accumulator(t):
    """The AccumulateGrad node of leaf t (one per leaf, created on first use; the tensor holds
    it weakly, so it lives as long as some graph points at it)."""
    ref = getattr(t, "_grad_acc", None)
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(t)
        t._grad_acc = weakref.ref(node)
    return node


def edge(t):
    """(node, input_nr) for an input tensor: its grad_fn and output slot, its accumulator if it
    is a leaf requiring grad, or (None, 0) if no gradient flows to it."""
    if t is None or not t._requires_grad:
        return (None, 0)
    if t.grad_fn is not None:
        return (t.grad_fn, getattr(t, "_output_nr", 0))
    return (grad_accumulator(t), 0)


def record(node, inputs, outputs):
    """Link node into the graph: its next_functions come from inputs, and each output (a
    Tensor or a tuple of them) gets node as grad_fn.  Returns the outputs."""
    node.next_functions = tuple(edge(t) for t in inputs)
    outs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    node._num_outputs = len(outs)
    node._out_meta = [(tuple(o.shape), o.dtype, o.device) if o is not None else None for o in outs]
    for i, o in enumerate(outs):
        if o is not None and o.is_floating_point():
            o._requires_grad = True
            o.grad_fn = node
            o._output_nr = i
    from . import anomaly
    if anomaly._enabled:
        node._trace = anomaly.current_trace()
    return outputs


def sum_to(grad, shape):
    """Reduce a gradient back to `shape` after broadcasting (sum over the broadcast dims)."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    lead = grad.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and grad.shape[lead + i] != 1]
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    if lead:
        grad = grad.reshape(shape)
    return grad


def node_type(name, backward):
    """A Node subclass named `name` (e.g. 'ExpBackward0') whose backward is
    backward(node, *grads)."""
    return type(name, (Node,), {"backward": backward, "__slots__": ()})
