"""Graph passes of torchlite.compile, run on a captured graph before fusion: dead-code
elimination, inlining the fused activations as their elementwise formulas (so they fuse with
their neighbours), common-subexpression elimination and constant folding.

Every node a pass adds gets node.meta['val'] (shape, dtype code, device, requires_grad) from
the elementwise rules, so the fusion pass can read it as it reads captured nodes."""
import builtins
import operator

from .._core.array import broadcast_shapes
from ..fx._symbolic_trace import Tracer, _Patcher, _patch_lock, _PATCHED_NAMESPACES
from ..fx.node import Node, map_aggregate
from ..fx.proxy import Proxy
from . import _lowering as L

__all__ = ["dead_code", "inline_decompositions", "decompose_moments", "split_dropout", "common_subexpressions",
           "fold_constants", "inline_constants"]


def _impure(n):
    """A node whose effect is more than its value: in-place ops (methods ending in '_', an
    inplace=True argument, given by keyword or position), out= writes, setitem, random draws."""
    if n.op not in ("call_function", "call_method", "call_module"):
        return False
    if n.op == "call_module":
        return True                 # a whole layer: it may update buffers
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    if name.endswith("_") and not name.endswith("__"):
        return True
    if n.target is operator.setitem or n.kwargs.get("out") is not None:
        return True
    if n.op == "call_function" and _inplace_argument(n):
        return True
    return _is_random(n)


_INPLACE_POSITION = {}      # function -> the position of its `inplace` parameter (or None)


def _inplace_argument(n):
    """Whether a call passes inplace=True, by keyword or by position."""
    if n.kwargs.get("inplace"):
        return True
    fn = n.target
    try:
        pos = _INPLACE_POSITION.get(fn, -1)
    except TypeError:
        return False
    if pos == -1:
        import inspect
        try:
            names = list(inspect.signature(fn).parameters)
            pos = names.index("inplace") if "inplace" in names else None
        except (TypeError, ValueError):
            pos = None
        _INPLACE_POSITION[fn] = pos
    return pos is not None and len(n.args) > pos and bool(n.args[pos])


_RANDOM = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout", "rand", "randn", "randint", "rand_like", "randn_like",
           "randint_like", "bernoulli", "multinomial", "normal", "randperm", "rrelu",
           "gumbel_softmax", "uniform_", "normal_", "bernoulli_", "exponential_", "poisson",
           "batch_norm", "instance_norm",       # the norms update running statistics
           "philox_reserve"}


def _is_random(n):
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    return name in _RANDOM


def dead_code(graph):
    """Erase nodes nothing uses, keeping those with effects."""
    changed = False
    for n in reversed(list(graph.nodes)):
        if n.op in ("placeholder", "output") or n.users or _impure(n):
            continue
        graph.erase_node(n)
        changed = True
    return changed


# ---- inlining activations --------------------------------------------------------------------------
class _InlineTracer(Tracer):
    """Records a function's Tensor ops into an existing graph (at its insertion point),
    torchlite's internal elementwise module included, so an activation's formula comes out as
    the elementwise ops its eager forward runs."""

    patched_namespaces = _PATCHED_NAMESPACES + ("torchlite._ops.elementwise",
                                                "torchlite._ops.creation")

    def __init__(self, graph):
        from ..nn.modules.module import Module
        super().__init__()
        self.graph = graph
        self.root = Module()
        self.constants = graph._constants
        self._module_paths = {}
        self.tensor_attrs = {}

    def call(self, fn, args, kwargs):
        """fn(*args, **kwargs) recorded, nodes among the arguments standing for their values:
        returns what fn returns, proxies replaced by their nodes."""
        def to_proxy(a):
            return Proxy(a, self) if isinstance(a, Node) else a
        pa, pk = map_aggregate((tuple(args), dict(kwargs)), to_proxy)
        import threading
        self._thread = threading.get_ident()
        with _patch_lock:
            patcher = _Patcher()
            try:
                self._patch(patcher)
                result = fn(*pa, **pk)
            finally:
                patcher.undo()
        return map_aggregate(result, lambda r: r.node if isinstance(r, Proxy) else r)


def describe(graph, nodes):
    """Give the new elementwise nodes meta['val'] from the elementwise rules; False when one
    of them is not an elementwise op."""
    for n in nodes:
        if n.op not in ("call_function", "call_method"):
            return False
        e = L.classify(n, dtype_of)
        if e is None:
            return False
        shapes = [a.meta["val"][0] for a in e.operands if isinstance(a, Node)]
        first = next(a for a in e.operands if isinstance(a, Node))
        _, _, device, _ = first.meta["val"]
        rg = any(a.meta["val"][3] for a in e.operands if isinstance(a, Node))
        shape = tuple(broadcast_shapes(*shapes))
        if e.kind == L.ROW:                 # a keepdim reduction of the last dimension
            shape = shape[:-1] + (1,)
        n.meta["val"] = (shape, e.out, device, rg and e.out != L.BOOL)
    return True


def dtype_of(a):
    v = a.meta.get("val") if isinstance(a, Node) else None
    return v[1] if v is not None else None


def inline_decompositions(graph):
    """Replace each call of an activation (relu, leaky_relu, softplus, ...) on a float CPU or
    CUDA tensor, or of rms_norm over the last dimension on a float CPU tensor, by the
    elementwise and row ops of its formula, when all of them fuse.  (On CUDA the activations
    become ops of the generated kernel; rms_norm stays the device's own kernel there, as a
    row program's speed against it is unmeasured.)"""
    from ..nn.functional.activation import COMPILE_DECOMPOSITIONS as ACTIVATIONS
    from ..nn.functional.normalization import COMPILE_DECOMPOSITIONS as NORMS
    table = {**ACTIVATIONS, **NORMS, **_finite_gradient_forms()}
    count = 0
    for n in list(graph.nodes):
        if n.op != "call_function" or not _hashable(n.target) or n.target not in table:
            continue
        x = n.args[0] if n.args else n.kwargs.get("input")
        if not isinstance(x, Node) or "val" not in x.meta or "val" not in n.meta:
            continue
        shape, dt, device, _ = x.meta["val"]
        on_device = device.startswith("cuda") and n.target not in NORMS
        if dt not in L.FLOATS or not (device == "cpu" or on_device):
            continue
        count += _replace_by_trace(graph, n, table[n.target], n.args, n.kwargs)
    return count


def _finite_gradient_forms():
    """softplus and mish written so that their traced backward is finite where eager's is.
    Their eager formula where(b*x > threshold, x, log1p(exp(b*x)) / b) sends a zero gradient
    into the unused branch, and past exp's overflow (x > 88 in float32) log1p's and exp's
    formulas make it 0 / inf * inf = NaN, where eager's own backward gives 1.  Setting exp's
    argument to 0 past the threshold changes no value the where keeps and keeps the unused
    branch finite (a NaN, not past the threshold, still gets eager's NaN gradient)."""
    from ..nn.functional import activation as A

    def softplus(input, beta=1.0, threshold=20.0):
        return _softplus(input, beta, threshold)

    def mish(input, inplace=False):
        return None if inplace else input * _softplus(input, 1.0, 20.0).tanh()
    return {A.softplus: softplus, A.mish: mish}


def _softplus(x, beta, threshold):
    from .._ops import elementwise as P
    bx = x * beta if beta != 1 else x
    linear = bx > threshold
    soft = P.where(linear, 0.0, bx).exp().log1p()
    return P.where(linear, x, soft / beta if beta != 1 else soft)


def _call_arguments(fn, n):
    """The arguments of call node n bound to fn's parameters, defaults filled in (a dict
    by parameter name), or None when they do not bind."""
    import inspect
    try:
        b = inspect.signature(fn).bind(*n.args, **n.kwargs)
    except TypeError:
        return None
    b.apply_defaults()
    return b.arguments


def _replace_by_trace(graph, n, fn, args, kwargs):
    """Trace fn(*args, **kwargs) into the graph before node n and, when every node it made is
    an elementwise or row op and the result has n's shape, dtype and device, put the result
    in n's place (1); else take the new nodes out again (0)."""
    before = set(graph.nodes)
    with graph.inserting_before(n):
        try:
            result = _InlineTracer(graph).call(fn, args, kwargs)
        except Exception:           # a formula that does not trace stays one op
            result = None
    new = [m for m in graph.nodes if m not in before]
    if isinstance(result, Node) and new and describe(graph, new) \
            and result.meta["val"][:3] == n.meta["val"][:3]:
        n.replace_all_uses_with(result)
        graph.erase_node(n)
        return 1
    for m in reversed(new):
        graph.erase_node(m)
    return 0


def decompose_moments(graph):
    """Replace var/std over the last dimension with keepdim=True (a float CPU tensor, the row
    length known) by means and elementwise ops -- mean, deviations, the mean of their squares
    scaled by L / (L - correction), sqrt for std -- so they fuse as row ops with their
    neighbours (a LayerNorm written with x.var(-1, keepdim=True, unbiased=False))."""
    from .._ops import reduction as R
    names = {"var": R.var, "std": R.std}
    count = 0
    for n in list(graph.nodes):
        if n.op == "call_method" and n.target in names:
            fn = names[n.target]
        elif n.op == "call_function" and _hashable(n.target) and n.target in names.values():
            fn = n.target
        else:
            continue
        a = _call_arguments(fn, n)
        if a is None:
            continue
        x, dim = a["input"], a["dim"]
        if not isinstance(x, Node) or "val" not in x.meta or "val" not in n.meta \
                or a["keepdim"] is not True or a["out"] is not None:
            continue
        shape, dt, device, _ = x.meta["val"]
        if isinstance(dim, (tuple, list)) and len(dim) == 1:
            dim = dim[0]
        if dt not in L.FLOATS or device != "cpu" or not shape or type(dim) is not builtins.int \
                or dim not in (-1, len(shape) - 1) or type(shape[-1]) is not builtins.int:
            continue
        c = a["correction"] if a["correction"] is not None else \
            (0 if a["unbiased"] is False else 1)
        length = shape[-1]
        if type(c) not in (builtins.int, builtins.float) or length - c <= 0:
            continue
        count += _replace_by_trace(graph, n, _moment_rows,
                                   (x, length / (length - c), fn is R.std), {})
    return count


def _moment_rows(x, factor, sqrt):
    d = x - x.mean(-1, keepdim=True)
    v = (d * d).mean(-1, keepdim=True)
    if factor != 1:
        v = v * factor
    return v.sqrt() if sqrt else v


def split_dropout(graph):
    """Split each F.dropout call on a float CPU or CUDA tensor of static shape (training, 0 < p < 1,
    not in place) into the generator's reservation, the mask drawn as an elementwise random
    node, and the multiply (compiler/_random.py), so the mask is drawn inside a fused kernel
    and the multiply fuses with its neighbours.  Returns the number split."""
    from ..nn.functional import dropout as F_dropout
    from ._random import philox_reserve, bernoulli_at
    count = 0
    for n in list(graph.nodes):
        if n.op != "call_function" or n.target is not F_dropout:
            continue
        a = _call_arguments(F_dropout, n)
        if a is None:
            continue
        x, p, training, inplace = (a[k] for k in ("input", "p", "training", "inplace"))
        if not isinstance(x, Node) or "val" not in x.meta or inplace is not False \
                or training is not True or type(p) not in (builtins.float, builtins.int) \
                or not 0 < p < 1:
            continue
        shape, dt, device, _ = x.meta["val"]
        if dt not in L.FLOATS or not (device == "cpu" or device.startswith("cuda")) \
                or not all(type(d) is builtins.int for d in shape):
            continue
        from .. import _dtype
        dtype = _dtype.float64 if dt == L.F64 else _dtype.float32
        numel = 1
        for d in shape:
            numel *= d
        keep = 1 - p
        with graph.inserting_before(n):
            sb = graph.call_function(philox_reserve, (numel, device))
            seed = graph.call_function(operator.getitem, (sb, 0))
            base = graph.call_function(operator.getitem, (sb, 1))
            mask = graph.call_function(bernoulli_at, (seed, base, keep, tuple(shape), dtype))
            noise = graph.call_function(operator.truediv, (mask, keep))
            out = graph.call_function(operator.mul, (x, noise))
        for m in (seed, base):
            m.meta["val"] = ((), 5, device, False)
        for m in (mask, noise):
            m.meta["val"] = (tuple(shape), dt, device, False)
        out.meta["val"] = n.meta["val"]
        n.replace_all_uses_with(out)
        graph.erase_node(n)
        count += 1
    return count


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


# ---- common subexpressions ---------------------------------------------------------------------------
_PURE_NAMES = {"view", "reshape", "transpose", "permute", "t", "unsqueeze", "squeeze", "expand",
               "flatten", "contiguous", "size", "matmul", "linear", "softmax", "log_softmax",
               "layer_norm", "sum", "mean", "float", "double", "to", "type_as", "chunk", "split"}


def _pure(n):
    if n.op not in ("call_function", "call_method") or _impure(n):
        return False
    if n.op == "call_function" and n.target in (operator.getitem, builtins.getattr):
        return True
    if L.classify(n, dtype_of) is not None:
        return True
    name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", "")
    module = "" if isinstance(n.target, str) else (getattr(n.target, "__module__", "") or "")
    return name in _PURE_NAMES and (n.op == "call_method" or module.startswith("torchlite"))


def _key(n):
    def k(a):
        if isinstance(a, Node):
            return ("node", id(a))
        if isinstance(a, (list, tuple)):
            return (type(a).__name__,) + tuple(k(e) for e in a)
        if isinstance(a, dict):
            return ("dict",) + tuple((kk, k(v)) for kk, v in sorted(a.items()))
        if isinstance(a, slice):
            return ("slice", k(a.start), k(a.stop), k(a.step))
        if isinstance(a, float):
            return ("float", repr(a))
        hash(a)
        return (type(a).__name__, a)
    return (n.op, n.target, k(n.args), k(n.kwargs))


def common_subexpressions(graph):
    """Merge pure nodes that compute the same thing from the same inputs.  An effect (an
    in-place op, a random draw) ends what is known: the same expression after it may read
    changed memory; and a value an effect takes as an argument is never merged with another
    (changing one would change both)."""
    seen = {}
    merged = 0
    changed_later = {a for n in graph.nodes if _impure(n) for a in n.all_input_nodes}
    for n in list(graph.nodes):
        if _impure(n):
            seen.clear()
            continue
        if not _pure(n) or n in changed_later:
            continue
        try:
            key = _key(n)
        except TypeError:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = n
            continue
        n.replace_all_uses_with(first)
        graph.erase_node(n)
        merged += 1
    return merged


# ---- constant folding --------------------------------------------------------------------------------
def fold_constants(graph):
    """Compute once the nodes that depend on no input, parameter or random draw (a causal mask
    built from sizes, a table of positions): their users take the value as a constant.  A
    value something changes in place, or that the graph returns, is still made per call; so
    is one computed from a tensor the graph holds as an argument (a global, another module's
    parameter: it may be changed or replaced between calls)."""
    const = {}
    folded = 0
    for n in list(graph.nodes):
        if n.op not in ("call_function", "call_method") or _impure(n):
            continue
        if any(a not in const for a in n.all_input_nodes):
            continue
        if n.op == "call_method" and not n.all_input_nodes:
            continue
        if _holds_outside_tensor((n.args, n.kwargs)):
            continue
        args, kwargs = map_aggregate((n.args, n.kwargs),
                                     lambda a: const[a] if isinstance(a, Node) else a)
        try:
            if n.op == "call_function":
                value = n.target(*args, **kwargs)
            else:
                value = getattr(args[0], n.target)(*args[1:], **kwargs)
        except Exception:
            continue
        const[n] = value
    for n, value in const.items():
        # only where every reader is an elementwise op making a new tensor: a reader that may
        # hand the same tensor on (.float() of a float tensor, a view) could let it be changed
        if n.users and all(_makes_new_tensor(u) for u in n.users):
            n.replace_all_uses_with(value)
            folded += 1
    dead_code(graph)
    return folded


def _holds_outside_tensor(args):
    from .._tensor import Tensor
    found = []
    map_aggregate(args, lambda a: found.append(a) if isinstance(a, Tensor) else None)
    return bool(found)


def _makes_new_tensor(n):
    e = L.classify(n, dtype_of) if n.op in ("call_function", "call_method") else None
    return e is not None and e.kind not in ("identity", "zeros")


def inline_constants(graph):
    """get_attr nodes of the graph's own constants (tensors the module does not own) become
    the tensors themselves in their users' arguments: the generated code names them as
    globals, and the module needs no attribute for them."""
    for n in list(graph.nodes):
        if n.op == "get_attr" and n.target in graph._constants:
            n.replace_all_uses_with(graph._constants[n.target])
            graph.erase_node(n)
