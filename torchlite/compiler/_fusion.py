"""Fusion: chains of elementwise nodes of one shape become one FusedKernel node, whose forward
is one fused program (the interpreter in torchlite/_core/fused.pyx) and whose backward is
another, derived ahead of time from the ops' own backward formulas (AOT autograd).

Partition.  Nodes are visited in order; an elementwise node joins the open group of one of
its elementwise inputs when it has the same shape, device and dtype family, else it starts a
group.  A group closes as soon as a node outside it reads one of its values, so the kernel can
sit where its last member was and no cycle can form.  Groups of one op stay eager ops.

Row ops (softmax/log_softmax over the last dimension, keepdim sum/mean of it) join the group
of their input when it has the input's shape; after one, a node of the row shape (the last
dimension 1: a reduced value and what is computed from it) joins too, so
`x * rsqrt(mean(x*x, -1) + eps)` is one kernel (the program computes row values once per row:
_lowering's compact values).  A row-shaped value read outside the kernel is returned as a
view of column 0 of the output it is spread into; its gradient comes back spread over the
row (each element g / L): the backward program's gradients of row values are per element,
summed by the row op's backward.

Backward.  The region's nodes are copied into a graph of their own; walking them backwards,
each op's gradient formula -- the same function eager autograd calls (elementwise_grad's
UNARY/BINARY tables and ternary nodes) -- is traced on proxies into that graph, so the
backward is a graph of elementwise ops, lowered to one more program: it recomputes the cheap
forward values it needs tile by tile, and reads back the costly ones (transcendental
functions, random masks, softmax results), which the forward program then also writes out
(_saved_values).  Gradients of broadcast inputs are summed back to their shapes after the
program."""
import functools
import operator
import warnings

from .._core.array import broadcast_shapes
from .._dispatch import fused as _fused
from .._tensor import _wrap
from ..autograd.graph import Node as AutogradNode, record, sum_to, pack, unpack, _FREED
from ..autograd.grad_mode import _state as _grad_state
from ..fx.graph import Graph
from ..fx.node import Node
from . import _lowering as L
from ._passes import _InlineTracer, _impure, dtype_of, dead_code, common_subexpressions
from ._random import philox_reserve

__all__ = ["fuse", "FusedKernel"]

MAX_INPUTS = 48
MAX_OUTPUTS = 12


class _Group:
    __slots__ = ("nodes", "closed", "shape", "device", "dtype", "inputs", "rows")

    def __init__(self, n, shape):
        v = n.meta["val"]
        self.nodes = [n]
        self.closed = False
        self.shape, self.device = shape, v[2]
        self.dtype = _family(n)
        self.inputs = set()
        self.rows = _is_row_op(n)

    def takes(self, shape, row_op):
        """Whether a node working on `shape` fits this group: the group's shape, or, in a
        group with row ops, the row shape (not for a row op: it needs whole rows)."""
        return shape == self.shape or (self.rows and not row_op and _row_shape_of(self.shape) == shape)


def _is_row_op(n):
    e = L.classify(n, dtype_of, n.meta["val"][1])
    return e is not None and e.kind in (L.ROW, L.SOFTMAX, L.SOFTMAX_BWD)


def _row_shape_of(shape):
    return tuple(shape[:-1]) + (1,) if len(shape) else None


def _work_shape(n):
    """The shape a node's instruction runs over: a row op's input's, else its own."""
    if _is_row_op(n):
        x = n.args[0] if n.args else n.kwargs.get("input")
        return x.meta["val"][0]
    return n.meta["val"][0]


def _family(n):
    """The float dtype a node computes in (the group's family)."""
    e = L.classify(n, dtype_of, n.meta["val"][1])
    return e.compute if e is not None and e.compute != L.BOOL else None


def _fusable(n):
    v = n.meta.get("val")
    if v is None or not (v[2] == "cpu" or v[2].startswith("cuda")) \
            or n.op not in ("call_function", "call_method"):
        return False
    if n.kwargs.get("out") is not None:
        return False
    e = L.classify(n, dtype_of, v[1])
    return e is not None and e.kind != "identity"


def partition(graph):
    """The groups of two or more fusable nodes (lists of nodes in graph order)."""
    group_of = {}
    groups = []
    for n in graph.nodes:
        # an effect (an in-place op, a random draw, a layer) closes every group: a kernel
        # placed after it would read memory it changed (a dropout's reservation of generator
        # blocks changes no memory a kernel reads: the mask is drawn inside the kernel)
        if _impure(n) and n.target is not philox_reserve:
            for g in groups:
                g.closed = True
        # reading a group's value from outside it closes that group
        if not _fusable(n):
            for a in n.all_input_nodes:
                g = group_of.get(a)
                if g is not None:
                    g.closed = True
            continue
        v = n.meta["val"]
        fam = _family(n)
        shape, row_op = _work_shape(n), _is_row_op(n)
        # every open group it reads, of its shape, device and dtype, merges with it: an open
        # group has no reader outside itself, so merging open groups cannot make a cycle
        joined = []
        for a in n.all_input_nodes:
            g = group_of.get(a)
            if g is not None and g not in joined and not g.closed and g.takes(shape, row_op) \
                    and g.device == v[2] and (g.dtype == fam or fam is None or g.dtype is None):
                joined.append(g)
        for a in n.all_input_nodes:          # the other groups it reads are closed now
            g = group_of.get(a)
            if g is not None and g not in joined:
                g.closed = True
        # the group whose shape is the widest (a row-shaped group joins a full one)
        joined.sort(key=lambda g: g.shape != shape)
        target = joined[0] if joined else None
        for g in joined[1:]:
            if len(target.inputs | g.inputs) > MAX_INPUTS or g.shape != target.shape or \
                    (g.dtype is not None and target.dtype is not None and g.dtype != target.dtype):
                g.closed = True
                continue
            target.nodes.extend(g.nodes)
            target.inputs |= g.inputs
            target.rows = target.rows or g.rows
            target.dtype = target.dtype if target.dtype is not None else g.dtype
            for m in g.nodes:
                group_of[m] = target
            g.nodes = []
        if target is not None:
            ext = {a for a in n.all_input_nodes if group_of.get(a) is not target}
            if len(target.inputs | ext) > MAX_INPUTS:
                target.closed = True
                target = None
        if target is None:
            target = _Group(n, shape)
            groups.append(target)
        else:
            target.nodes.append(n)
            target.rows = target.rows or row_op
            if target.dtype is None:
                target.dtype = fam
        target.inputs |= {a for a in n.all_input_nodes if group_of.get(a) is not target}
        group_of[n] = target
    order = {n: i for i, n in enumerate(graph.nodes)}
    for g in groups:
        g.nodes.sort(key=order.get)
        g.inputs -= set(g.nodes)
    return [g for g in groups if len(g.nodes) >= 2 and g.dtype is not None]


def fuse(graph, name_prefix="fused", dynamic=False, native=False):
    """Replace each group by one FusedKernel call; returns the kernels made.  native: the
    kernels' programs also run as generated C where it can be built (compiler/_cpp.py)."""
    kernels = []
    for k, g in enumerate(partition(graph)):
        members = set(g.nodes)
        inputs = []
        for n in g.nodes:
            for a in n.all_input_nodes:
                if a not in members and a not in inputs:
                    inputs.append(a)
        outputs = [n for n in g.nodes if any(u not in members for u in n.users)]
        if not outputs or len(outputs) > MAX_OUTPUTS:
            continue
        kernel = install(graph, f"{name_prefix}_{k}", g.nodes, inputs, outputs, g.shape, dynamic,
                         native)
        if kernel is not None:
            kernels.append(kernel)
    return kernels


def install(graph, name, nodes, inputs, outputs, shape, dynamic=False, native=False):
    """Replace `nodes` (in graph order; `inputs` the values they read from outside, `outputs`
    those read outside them) by one FusedKernel call after the last of them, whose items take
    the outputs' uses; returns the kernel, or None (graph unchanged) when the region cannot be
    lowered to a program."""
    region = _region_graph(nodes, inputs, outputs)
    try:
        kernel = FusedKernel(name, region, inputs, outputs, shape, dynamic,
                             [o.meta["val"][0] != shape for o in outputs], native)
    except L.NotLowerable:
        return None
    with graph.inserting_after(nodes[-1]):
        call = graph.create_node("call_function", kernel, tuple(inputs), {})
    call.meta["fused"] = kernel
    after = call
    for i, o in enumerate(outputs):
        with graph.inserting_after(after):
            item = graph.create_node("call_function", operator.getitem, (call, i), {})
        item.meta["val"] = o.meta["val"]
        o.replace_all_uses_with(item)
        after = item
    for n in reversed(nodes):
        graph.erase_node(n)
    return kernel


def _region_graph(nodes, inputs, outputs):
    """A graph of the region alone: one placeholder per input, the nodes, a tuple output."""
    rg = Graph()
    env = {}
    for i, a in enumerate(inputs):
        p = rg.placeholder(f"in{i}")
        p.meta["val"] = a.meta.get("val")
        env[a] = p
    for n in nodes:
        env[n] = rg.node_copy(n, lambda a: env[a])
        env[n].meta["val"] = n.meta.get("val")
    rg.output(tuple(env[o] for o in outputs))
    return rg


# ---- the kernel ----------------------------------------------------------------------------------
class FusedKernel:
    """A fused elementwise region: called with its input tensors, returns its outputs (a
    tuple).  When an input requires grad (and grad mode is on), the outputs get one autograd
    node whose backward runs the region's backward program.  A dynamic kernel (dynamic=True)
    takes the shape from its inputs on each call.  out_rows[i]: output i has the row shape
    (the last dimension 1), a view of column 0 of what the program writes.  native: its
    programs run as generated C where that can be built (compiler/_cpp.py)."""

    def __init__(self, name, region, inputs, outputs, shape, dynamic=False, out_rows=None,
                 native=False):
        self.__name__ = name
        self.native = native
        self.out_rows = list(out_rows) if out_rows is not None else [False] * len(outputs)
        self.region = region
        self.shape = tuple(shape)
        self.dynamic = dynamic
        self.in_vals = [a.meta.get("val") for a in inputs]
        in_dtypes = [v[1] for v in self.in_vals]
        self.spec = L.lower(name, region, in_dtypes)
        self.program, self.out_dtypes = self.build(self.spec), list(self.spec.out_dtypes)
        self.in_shapes = [v[0] for v in self.in_vals]
        # the backward programs, one per pattern of inputs requiring grad (built on the first
        # call that records a node with it: no work for gradients nobody wants); _backward is
        # the last one used
        self._backwards = {}
        self._backward = None
        self._python = None
        # which inputs each output and each row op's operand depend on: a dynamic call checks
        # that they really have the shape the program works on (elementwise ops commute with
        # broadcasting, so only these shapes can differ; a row op must see whole rows)
        self._deps = _shape_dependencies(region)

    def __repr__(self):
        return f"<FusedKernel {self.__name__}: {self.program.num_instructions} ops>"

    def build(self, spec):
        """The interpreter's Program of one of this kernel's specs (forward or backward), set
        to run its generated C when the kernel is native and the C can be built."""
        program = spec.program()
        if self.native:
            from . import _cpp
            try:
                made = _cpp.native_program(spec)
            except RuntimeError as e:       # a compiler that fails: the interpreter runs it
                warnings.warn(f"torchlite.compile: cpp_codegen could not build {spec.name} "
                              f"({str(e).splitlines()[0]}); it runs on the interpreter")
                made = None
            if made is not None:
                program.set_native(made[1], made[0])
        return program

    def __call__(self, *inputs):
        shape = self.run_shape(inputs)
        if shape is None:
            return self._eager(*inputs)
        bw, program, spec = self.plan(tuple(t._requires_grad for t in inputs))
        result = _run(program, spec, tuple(t._data for t in inputs), shape)
        if result is None:                   # no CUDA kernel for it: its ops, one by one
            return self._eager(*inputs)
        return self.finish(inputs, result, shape, bw)

    def run_shape(self, inputs):
        """The shape the program runs over for these inputs; None when the call must run the
        region's ops one by one instead (broadcasting that does not hold for a dynamic
        kernel's sizes, or nothing to compute: rows of no elements give their sums' zeros,
        their means' NaN, which the ops give)."""
        shape = self.shape
        if self.dynamic:
            shape = self._shape_of(inputs)
        return None if shape is None or 0 in shape else shape

    def plan(self, requires_grad):
        """(backward, program, spec) for inputs of which requires_grad[i] says which require
        grad: the backward plan of that pattern (None when no output gets a gradient node),
        and the program to run, which with a backward also writes the values it saves."""
        bw = None
        if _grad_state.enabled and any(requires_grad):
            bw = self._backwards.get(requires_grad)
            if bw is None:
                bw = self._backwards[requires_grad] = _Backward(self, requires_grad)
            self._backward = bw
            if not any(bw.out_requires_grad):     # no output has a gradient path: no node
                bw = None
        if bw is not None and bw.forward_program is not None:    # the values it saves too
            return bw, bw.forward_program, bw.forward_spec
        return bw, self.program, self.spec

    def finish(self, inputs, result, shape, bw):
        """The output tensors of a run of plan()'s program that gave the arrays `result`, with
        the autograd node of plan()'s backward `bw` recorded on them."""
        n_out = len(self.out_rows)
        outs = tuple(_wrap(_column_0(a) if row else a)
                     for a, row in zip(result[:n_out], self.out_rows))
        if bw is not None:
            node = bw.node_class()
            node.kernel = self
            node.plan = bw
            node._saved = {f"in{i}": pack(t, False) for i, t in enumerate(inputs)
                           if bw.needs_input[i]}
            node._saved.update((f"py{i}", pack(t, False)) for i, t in enumerate(inputs)
                               if bw.python_needs[i])
            node.in_specs = [(t._data.dtype, t.device) for t in inputs]
            node._saved.update((f"s{j}", pack(_wrap(a), False))
                               for j, a in enumerate(result[n_out:]))
            node.n_inputs = len(inputs)
            node.shape = shape
            node.in_shapes = [tuple(t._data.shape) for t in inputs]
            if len(outs) == 1:
                record(node, inputs, outs[0])
            else:
                record(node, inputs, tuple(o if rg else None for o, rg in zip(outs, bw.out_requires_grad)))
        return outs

    def _shape_of(self, inputs):
        try:
            shape = tuple(broadcast_shapes(*[t._data.shape for t in inputs]))
            for deps in self._deps:
                if tuple(broadcast_shapes(*[inputs[i]._data.shape for i in deps])) != shape:
                    return None
        except (RuntimeError, ValueError):
            return None
        return shape

    def _eager(self, *inputs):
        if self._python is None:
            self._python = _python_of(self.region, self.__name__)
        return tuple(self._python(None, *inputs))

    def source(self):
        """The region as Python code (for TORCHLITE_LOGS=graph_code)."""
        return self.region.python_code("self").src


def _run(program, spec, arrays, shape):
    """The outputs of a fused program on `arrays`, through the array layer: the CPU
    interpreter (torchlite/_core/fused.pyx) for host arrays, the CUDA backend's generated
    kernel (torchlite/cuda/_fused.py) for device ones; None when there is no kernel for them
    (an op without a CUDA form, arrays on several devices)."""
    try:
        return _fused.run(program, arrays, shape, spec)
    except NotImplementedError:
        return None


def _with_outputs(region, extra):
    """A copy of a region graph that also returns the values of the nodes `extra`."""
    g = Graph()
    env = {}
    for n in region.nodes:
        if n.op == "output":
            g.output(tuple(env[o] for o in n.args[0]) + tuple(env[e] for e in extra))
        else:
            env[n] = g.node_copy(n, lambda a: env[a])
            env[n].meta["val"] = n.meta.get("val")
    return g


def _passed_through(graph):
    """(passed, graph): for each output of a backward graph, the index of the placeholder it
    is (None for a computed one), and the graph returning only the computed ones (the graph
    itself when every output is computed)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    out = next(n for n in graph.nodes if n.op == "output")
    values = out.args[0] if isinstance(out.args[0], (tuple, list)) else (out.args[0],)
    passed = [placeholders.index(v) if isinstance(v, Node) and v.op == "placeholder" else None
              for v in values]
    if all(p is None for p in passed) or all(p is not None for p in passed):
        return [None] * len(values), graph
    g = Graph()
    env = {}
    for n in graph.nodes:
        if n.op == "output":
            g.output(tuple(env[v] for v, p in zip(values, passed) if p is None))
        else:
            env[n] = g.node_copy(n, lambda a: env[a])
            env[n].meta["val"] = n.meta.get("val")
    return passed, g


def _column_0(a):
    """Column 0 of the last dimension of a (a view): a row value the program wrote on every
    element of its row."""
    shape = tuple(a.shape)
    return a.as_strided(shape[:-1] + (1,), tuple(a.strides))


def _python_of(graph, name):
    """The function the graph's Python code defines (called with a dummy `self`)."""
    code = graph.python_code("self")
    scope = dict(code.globals)
    exec(compile(code.src, f"<{name}>", "exec"), scope)
    return scope["forward"]


def _shape_dependencies(region):
    """For each output of a region graph, then each row op's operand, the indices of the
    inputs it depends on."""
    placeholders = [n for n in region.nodes if n.op == "placeholder"]
    index = {p: i for i, p in enumerate(placeholders)}
    deps = {}
    for n in region.nodes:
        if n.op == "placeholder":
            deps[n] = {index[n]}
        elif n.op != "output":
            deps[n] = set().union(*[deps[a] for a in n.all_input_nodes]) if n.all_input_nodes else set()
    out = next(n for n in region.nodes if n.op == "output").args[0]
    checks = [o for o in out if isinstance(o, Node)]
    checks += [n.args[0] if n.args else n.kwargs["input"] for n in region.nodes
               if n.op not in ("placeholder", "output") and _is_row_op(n)]
    return [sorted(deps[o]) for o in checks]


class _Backward:
    """The backward of a kernel: a graph of elementwise ops taking the region's inputs and
    the outputs' gradients, returning one gradient per input that can have one and is wanted
    (wants[i]: input i requires grad); run as one fused program (or, when some formula has no
    fusable form, as its Python code).

    The program recomputes the forward values it needs, but for the costly ones
    (_saved_values: softmax results, transcendental functions, random masks), which cost more
    to compute again than to read back: forward_program is then the kernel's program with
    those values as extra outputs, which the node saves.  The Python form (create_graph=True)
    recomputes everything, so the second derivative sees them as functions of the inputs."""

    def __init__(self, kernel, wants=None):
        self.kernel = kernel
        name = kernel.__name__
        self.graph, self.grad_of = derive_backward(kernel.region, wants)
        in_dtypes = [v[1] for v in kernel.in_vals] + list(kernel.out_dtypes)
        self.forward_program = self.forward_spec = None
        saved, graph = _saved_values(kernel.region, wants)
        self.saved_names = [n.name for n in saved]     # what the forward keeps for it
        try:
            if not any(self.grad_of):   # no input gets a gradient (a mask's operands only)
                raise L.NotLowerable("no gradient to compute")
            if not saved:
                graph = self.graph
            elif graph is None:
                graph, _ = derive_backward(kernel.region, wants, saved)
            if saved:
                in_dtypes += [n.meta["val"][1] for n in saved]
                self.forward_spec = L.lower(name, _with_outputs(kernel.region, saved),
                                            [v[1] for v in kernel.in_vals])
                self.forward_program = kernel.build(self.forward_spec)
            # a gradient that is one of the program's inputs as it is (an add's: the output's
            # gradient) is passed on, as eager's add passes it, not copied by the program
            self.passed, graph = _passed_through(graph)
            self.spec = L.lower(name + "_backward", graph, in_dtypes)
            self.program = kernel.build(self.spec)
        except L.NotLowerable:      # a formula with no fused form, or too many gradients
            self.program = self.spec = self.forward_program = self.forward_spec = None
        self.python = _python_of(self.graph, name + "_backward")
        self.node_class = type("CompiledFunctionBackward", (_KernelNode,), {})
        # the inputs the backward reads: only those are saved, as eager saves only what its
        # formulas need -- an input changed in place after the call must not fail a backward
        # that never reads it.  The program, reading the saved values back, may need fewer
        # inputs than the Python form (create_graph=True), which recomputes them: the Python
        # form's extra inputs are kept apart and checked only when it runs
        n_in = len(kernel.in_vals)
        python_reads = _reads(self.graph, n_in)
        self.needs_input = _reads(graph, n_in) if self.program is not None else python_reads
        self.python_needs = tuple(p and not q for p, q in zip(python_reads, self.needs_input))
        # which outputs carry the node: those computed, through float values, from an input
        # requiring grad (an output of the other inputs alone does not require grad, as eager's)
        self.out_requires_grad = _outputs_depending_on(kernel.region, wants)

    def run(self, inputs, grads, shape, in_shapes, saved=(), python_inputs=None):
        """One gradient per kernel input (None where none flows); saved: what the forward
        program saved; python_inputs: a function giving the inputs the Python form reads
        (inputs has those the program reads)."""
        result = None
        if self.program is not None and not _grad_state.enabled:
            arrays = tuple(t._data for t in inputs) + tuple(g._data for g in grads) \
                + tuple(t._data for t in saved)
            result = _run(self.program, self.spec, arrays, shape)
        if result is not None:
            computed = iter(result)
            given = tuple(inputs) + tuple(grads) + tuple(saved)
            outs = [_wrap(next(computed)) if p is None else given[p] for p in self.passed]
        else:   # create_graph=True (or no CUDA kernel): the formulas as eager ops
            if python_inputs is not None:
                inputs = python_inputs()
            outs = list(self.python(None, *inputs, *grads))
        result = []
        j = 0
        for i in range(len(inputs)):
            if self.grad_of[i]:
                g = outs[j]
                j += 1
                if tuple(g.shape) != tuple(in_shapes[i]):
                    g = sum_to(g, in_shapes[i])
                result.append(g)
            else:
                result.append(None)
        return result


# Elementwise ops whose value the backward reads back instead of computing again: each costs
# several times a read of its result (erf about 20 times a multiply in the interpreter, a
# random mask its Philox rounds), so saving it is the cheaper side at any size -- eager
# autograd saves a dropout mask too.  Cheap ops (products, sums, comparisons) are recomputed:
# reading them back would cost more than the instruction.
_COSTLY_UNARY = frozenset({
    "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sigmoid",
    "tanh", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "lgamma", "digamma", "i0", "sinc"})


def _reads(graph, n_in):
    """Whether a backward graph reads each of its first n_in placeholders (the kernel inputs)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    return tuple(bool(p.users) for p in placeholders[:n_in])


def _outputs_depending_on(region, wants):
    """For each output of a region graph, whether it is computed through float values from
    an input i with wants[i] (a comparison or a random mask passes no gradient on)."""
    placeholders = [n for n in region.nodes if n.op == "placeholder"]
    deps = {p: wants is None or wants[i] for i, p in enumerate(placeholders)}
    for n in region.nodes:
        if n.op in ("placeholder", "output"):
            continue
        e = L.classify(n, _region_dtype(region))
        if e is not None and (e.out == L.BOOL or e.kind == L.RANDOM):
            deps[n] = False
        else:
            deps[n] = any(deps.get(a, False) for a in n.all_input_nodes)
    outputs = next(n for n in region.nodes if n.op == "output").args[0]
    return tuple(isinstance(o, Node) and deps.get(o, False) for o in outputs)


def _saved_values(region, wants):
    """(saved, graph): the region's nodes whose values the backward program reads from the
    forward instead of computing them again -- softmax/log_softmax results, and the costly ops
    (_COSTLY_UNARY, the random draws) of the kernel's full shape, only those the backward
    reads -- and the backward graph reading them when it is already derived (else None)."""
    outputs = next(n for n in region.nodes if n.op == "output").args[0]
    full = {tuple(o.meta["val"][0]) for o in outputs if isinstance(o, Node) and o.meta.get("val")}
    cands = []
    for n in region.nodes:
        if n.op in ("placeholder", "output"):
            continue
        e = L.classify(n, dtype_of)
        if e is not None and (e.kind == L.SOFTMAX or (tuple(n.meta["val"][0]) in full and (
                e.kind == L.RANDOM or (e.kind == L.UNARY and e.name in _COSTLY_UNARY)))):
            cands.append(n)
            end = _scaled_end(n, full)
            if end is not n:
                cands.append(end)
    if not cands:
        return [], None
    graph, _ = derive_backward(region, wants, cands)
    read = {n.name for n in graph.nodes if n.op == "placeholder" and n.users}
    saved = [n for j, n in enumerate(cands) if f"saved{j}" in read]
    return saved, (graph if len(saved) == len(cands) else None)


def _scaled_end(n, full):
    """The last node of the chain that starts at n and goes on through a node's only user
    while that user combines it with constants alone (a dropout mask's `/ (1 - p)`): saved
    too, it spares the backward that chain's instructions where the formulas read its end
    (a product's gradient reads the other factor); where they read n, n is the one read."""
    end = n
    while len(end.users) == 1:
        u = next(iter(end.users))
        e = L.classify(u, dtype_of)
        if e is None or e.kind not in (L.UNARY, L.BINARY) or not u.meta.get("val") \
                or tuple(u.meta["val"][0]) not in full \
                or any(isinstance(a, Node) and a is not end for a in e.operands):
            break
        end = u
    return end


class _KernelNode(AutogradNode):
    """The autograd node of a FusedKernel call (PyTorch names it CompiledFunctionBackward)."""

    kernel = plan = None
    n_inputs = 0
    shape = in_shapes = ()

    def backward(self, *grads):
        if self._released:
            raise RuntimeError(_FREED)
        inputs = [self._input(i, "in") for i in range(self.n_inputs)]
        k = self.kernel
        shape = self.shape
        full = []
        for g, dt, row in zip(grads, k.out_dtypes, k.out_rows):
            if g is None:
                from .._ops.creation import zeros
                g = zeros(shape, dtype=_dtype(dt), device=inputs[0].device if inputs else None)
            elif row:       # a row value's gradient, spread over its row (see the docstring)
                g = g.expand(shape) / shape[-1]
            full.append(g if tuple(g.shape) == shape else g.expand(shape))
        saved = [unpack(self, k, v) for k, v in self._saved.items() if k.startswith("s")]
        grads_in = self.plan.run(inputs, full, shape, self.in_shapes, saved,
                                 lambda: [self._input(i, "in", "py") for i in range(self.n_inputs)])
        return tuple(g if e[0] is not None else None
                     for g, e in zip(grads_in, self.next_functions))

    def _input(self, i, *kinds):
        """Input i as saved under one of the prefixes `kinds`, else a stand-in."""
        for kind in kinds:
            key = f"{kind}{i}"
            if key in self._saved:
                return unpack(self, key, self._saved[key])
        return _stand_in(self.in_shapes[i], *self.in_specs[i])


@functools.lru_cache(maxsize=256)
def _stand_in(shape, dtype_code, device):
    """An input the backward does not read: zeros of its shape and dtype, in no memory (one
    per shape, dtype and device: nothing writes to it)."""
    from .._ops.creation import zeros
    return zeros((), dtype=_dtype(dtype_code), device=device).expand(shape)


@functools.lru_cache(maxsize=None)
def _dtype(code):
    from .. import _dtype as D
    return next(d for d in vars(D).values() if isinstance(d, D.dtype) and d.code == code)


# ---- deriving the backward ----------------------------------------------------------------------
class _Fake:
    """Stands for an autograd node in the formulas (they read n.alpha, self.value,
    self.next_functions)."""

    def __init__(self, alpha=1.0, value=1.0, wants=(True, True, True)):
        self.alpha, self.value = alpha, value
        self.next_functions = tuple((object(), 0) if w else (None, 0) for w in wants)
        self.numbers = {}


def derive_backward(region, needed=None, saved=()):
    """(graph, grad_of): the backward graph of a region graph -- inputs: the region's inputs,
    one gradient per region output, then the values of the region's nodes `saved` (read
    instead of recomputed); output: the gradients of the inputs that can have one and are
    needed (needed[i], all when None; grad_of[i] says which).  Raises NotLowerable when a
    formula does not trace."""
    from .._ops import elementwise_grad as PG
    bg = Graph()
    env = {}
    placeholders = [n for n in region.nodes if n.op == "placeholder"]
    for i, p in enumerate(placeholders):
        env[p] = bg.placeholder(f"in{i}")
        env[p].meta["val"] = p.meta.get("val")
    out_node = next(n for n in region.nodes if n.op == "output")
    outputs = list(out_node.args[0])
    gouts = []
    for i, o in enumerate(outputs):
        gp = bg.placeholder(f"grad{i}")
        gp.meta["val"] = o.meta.get("val")
        gouts.append(gp)
    for j, n in enumerate(saved):
        env[n] = bg.placeholder(f"saved{j}")
        env[n].meta["val"] = n.meta.get("val")
    body = [n for n in region.nodes if n.op not in ("placeholder", "output")]
    for n in body:
        if n not in env:
            env[n] = bg.node_copy(n, lambda a: env[a])
            env[n].meta["val"] = n.meta.get("val")
    tracer = _InlineTracer(bg)
    grad = {}

    def add(v, g):
        if g is None:
            return
        if v in grad:
            grad[v] = tracer.call(operator.add, (grad[v], g), {})
        else:
            grad[v] = g
    for o, gp in zip(outputs, gouts):
        add(o, gp)
    for n in reversed(body):
        g = grad.get(n)
        if g is None:
            continue
        e = L.classify(n, _region_dtype(region))
        if e is None or e.out == L.BOOL or e.kind == L.RANDOM:     # a mask: no gradient
            continue
        ops = e.operands
        if e.kind == "identity":
            add(ops[0], g)
            continue
        wants = [isinstance(x, Node) and _differentiable(x) for x in ops]
        xs = [env[x] if isinstance(x, Node) else x for x in ops]
        if e.kind == L.UNARY:
            formula = PG.UNARY.get(e.name)
            if formula is None:
                raise L.NotLowerable(f"no formula for {e.name}")
            if wants[0]:
                gx = tracer.call(lambda g_, x_, y_: formula[0](g_, x_, y_, e.params),
                                 (g, xs[0], env[n]), {})
                add(ops[0], gx)
        elif e.kind == L.BINARY:
            entry = PG.BINARY.get(e.name)
            if entry is None:
                raise L.NotLowerable(f"no formula for {e.name}")
            fa, _, fb, _ = entry
            fake = _Fake(alpha=e.alpha)
            if wants[0]:
                add(ops[0], tracer.call(lambda g_, a_, b_, y_: fa(g_, a_, b_, y_, fake),
                                        (g, xs[0], xs[1], env[n]), {}))
            if wants[1]:
                add(ops[1], tracer.call(lambda g_, a_, b_, y_: fb(g_, a_, b_, y_, fake),
                                        (g, xs[0], xs[1], env[n]), {}))
        elif e.kind in (L.ROW, L.SOFTMAX):
            if wants[0]:
                add(ops[0], tracer.call(_ROW_GRADS[e.name], (g, env[n]), {}))
        else:
            cls = {"where": PG.WhereBackward0, "lerp": PG.LerpBackward0,
                   "addcmul": PG.AddcmulBackward0, "addcdiv": PG.AddcdivBackward0}[e.name]
            node = cls()
            node.value = e.value
            node.next_functions = _Fake(wants=wants).next_functions
            names = cls.names
            grads = tracer.call(lambda g_, *v_: node.grads(g_, dict(zip(names, v_))),
                                (g, *xs), {})
            for x, w, gx in zip(ops, wants, grads):
                if w and gx is not None:
                    add(x, gx)
    grad_of = []
    results = []
    for i, p in enumerate(placeholders):
        g = grad.get(p)
        if g is not None and _differentiable(p) and (needed is None or needed[i]):
            grad_of.append(True)
            results.append(g)
        else:
            grad_of.append(False)
    bg.output(tuple(results))
    dead_code(bg)
    common_subexpressions(bg)
    return bg, grad_of


def _row_sum(t):
    return t.sum(-1, keepdim=True)


# the gradients of the row ops, (g, y) -> the operand's gradient, as row ops and elementwise
# ops the backward program runs (g and y hold full rows; a row value's g is per element);
# softmax's and log_softmax's are one node each, the interpreter's SOFTMAX_BWD row instruction
_ROW_GRADS = {
    "sum": lambda g, y: _row_sum(g),
    "mean": lambda g, y: g.mean(-1, keepdim=True),
    "softmax": lambda g, y: L.softmax_grad(g, y, False),
    "log_softmax": lambda g, y: L.softmax_grad(g, y, True),
}


def _differentiable(n):
    v = n.meta.get("val")
    return v is not None and v[1] in L.FLOATS


def _region_dtype(region):
    return lambda a: a.meta["val"][1] if isinstance(a, Node) and a.meta.get("val") else None
