"""Which fx nodes are elementwise kernel ops, and how a graph of them becomes one fused
program (torchlite/_core/fused.pyx).

`classify(node, dtype_of)` reads a node the way the eager op would run it: the kernel op of
elementwise.pyx's tables (the op lists of kernels/ewise_ops.h), its operands, its scalar
parameters, the dtype it computes in and the dtype it returns.  Nodes come from three
spellings of one op -- `torchlite.mul(a, b)`, `a.mul(b)`, `a * b` -- and all of them land on
the same kernel op.  Only float32/float64 ops (and bool masks feeding them) are fused: they
are what a model's elementwise chains are made of, and their loops all exist at every ISA
level.

Row ops -- `softmax`/`log_softmax` over the last dimension, and `sum`/`mean` over it with
`keepdim=True` -- are read as the interpreter's row instructions (kinds ROW and SOFTMAX): a
program holding one works on whole rows.  So is `softmax_grad(g, y, log)`, the gradient of
softmax/log_softmax that the backward programs call (kind SOFTMAX_BWD: one pass per row, the
eager backward's row kernel).  A row sum or mean is a compact value (one per row);
so is every elementwise result computed from compact values alone (`rsqrt(mean + eps)`), run
over one element per row.  Where an instruction on full rows reads a compact value, a spread
instruction first writes it along its rows.

`build_program(graph)` lowers a region graph (placeholders, elementwise nodes, one output
tuple) to a Program: inputs, constants, scratch registers assigned by liveness, and one
instruction per node, each calling the eager op's loop."""
import builtins
import math
import operator
from dataclasses import dataclass

from .._core import elementwise as _ew
from .._core.fused import Program
from .._ops import elementwise as _P

BOOL, F32, F64 = 0, 8, 9
_ITEMSIZE = {BOOL: 1, F32: 4, F64: 8}
# what one fused program holds (torchlite/_core/fused.pyx: MAX_IN, 16 outputs, 144 slots)
MAX_PROGRAM_INPUTS, MAX_PROGRAM_OUTPUTS, MAX_PROGRAM_SLOTS = 64, 16, 144
FLOATS = (F32, F64)
UNARY, BINARY, TERNARY, CAST = 0, 1, 2, 3
ROW, SOFTMAX = 4, 5         # row instructions over the last dimension (fused.pyx K_ROW, K_SOFTMAX)
_ROW_CODES = {"sum": 0, "mean": 1, "softmax": 0, "log_softmax": 1}
ROW_SPREAD = 2              # the ROW op writing a compact value along its rows
RANDOM = 6                  # a random draw at the element's place in a stream (fused.pyx K_RANDOM)
SOFTMAX_BWD = 7             # softmax_grad over the last dimension (fused.pyx K_SOFTMAX_BWD)
I64 = 5

_UNARY_NAMES = {}          # public name or alias -> kernel op
for _name, _op, _doc, _aliases in _P._UNARY_OPS:
    for _n in (_name,) + tuple(_aliases):
        _UNARY_NAMES[_n] = _op
for _name, _op, _doc in _P._BOOL_UNARY:
    _UNARY_NAMES[_name] = _op
_BINARY_NAMES = {}
for _name, _op, _doc, _aliases in _P._BINARY_OPS:
    for _n in (_name,) + tuple(_aliases):
        _BINARY_NAMES[_n] = _op
_BINARY_NAMES.update(add="add", sub="sub", subtract="sub", div="div", divide="div",
                     true_divide="div", pow="pow")
_TERNARY_NAMES = {"where": "where", "addcmul": "addcmul", "addcdiv": "addcdiv", "lerp": "lerp"}
# the one-pass activations and their gradients (kernel ops without a public function of their
# own: F.gelu/F.silu/F.hardswish/F.hardsigmoid and _ops.elementwise's *_backward, read by
# _activation)
_ACTIVATION_UNARY = ("gelu", "gelu_tanh", "silu", "hardswish", "hardsigmoid")
_BINARY_NAMES.update(gelu_backward="gelu_backward", gelu_tanh_backward="gelu_tanh_backward",
                     silu_backward="silu_backward", hardswish_backward="hardswish_backward",
                     hardsigmoid_backward="hardsigmoid_backward")
_CLAMPS = ("clamp", "clip", "clamp_min", "clamp_max")

_OPERATORS = {operator.add: "add", operator.sub: "sub", operator.mul: "mul",
              operator.truediv: "div", operator.pow: "pow", operator.neg: "neg",
              operator.gt: "gt", operator.lt: "lt", operator.ge: "ge", operator.le: "le",
              operator.eq: "eq", operator.ne: "ne", operator.and_: "bitwise_and",
              operator.or_: "bitwise_or", operator.xor: "bitwise_xor",
              operator.invert: "bitwise_not", operator.floordiv: "floor_divide",
              operator.mod: "remainder"}

# the functions of torchlite's namespace that are these ops, by identity
_FUNCTIONS = {}
for _n in list(_UNARY_NAMES) + list(_BINARY_NAMES) + list(_TERNARY_NAMES) + list(_CLAMPS) + ["rsub"]:
    _f = getattr(_P, _n, None)
    _f = getattr(_f, "_autocast_original", _f)      # amp's wrapper, once autocast was used
    if callable(_f):
        _FUNCTIONS.setdefault(_f, _n)

_BOOL_OUT = {"isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit", "logical_not",
             "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
# bool operands are allowed (and computed in bool) for the logical ops only
_ON_BOOL = {"logical_not": "logical_not", "bitwise_not": "logical_not",
            "logical_and": "logical_and", "bitwise_and": "logical_and",
            "logical_or": "logical_or", "bitwise_or": "logical_or",
            "logical_xor": "logical_xor", "bitwise_xor": "logical_xor"}
_IDENTITY_METHODS = ("detach", "contiguous")


class Ew:
    """One elementwise op read off a node: kernel kind/op/name, operands (nodes or Python
    numbers), the loop's scalar parameters, the dtype it computes in and the one it returns."""

    __slots__ = ("kind", "name", "operands", "params", "compute", "out", "alpha", "value")

    def __init__(self, kind, name, operands, params, compute, out):
        self.kind, self.name, self.operands, self.params = kind, name, operands, params
        self.compute, self.out = compute, out
        self.alpha = params[0] if name == "add_alpha" else 1.0
        self.value = params[0] if name in ("addcmul", "addcdiv") else 1.0

    @property
    def code(self):
        if self.kind in (ROW, SOFTMAX):
            return _ROW_CODES[self.name]
        if self.kind == SOFTMAX_BWD:
            return 1 if self.name == "log_softmax_grad" else 0
        if self.kind == RANDOM:
            return 0                            # the one random op: Bernoulli
        table = (_ew.UNARY, _ew.BINARY, _ew.TERNARY)[self.kind]
        return table[self.name]

    def __repr__(self):
        return f"Ew({self.name}, {self.operands}, {self.params})"


def _number(x):
    return type(x) in (builtins.int, builtins.float, builtins.bool)


def _canonical(node):
    """(public op name, args, kwargs) of an elementwise call, or None."""
    if node.op == "call_function" and node.target is _zeros_like() and len(node.args) == 1 \
            and not node.kwargs:
        return "zeros_like", node.args, {}
    if node.op == "call_function":
        fn = node.target
        if fn in _OPERATORS:
            return _OPERATORS[fn], node.args, node.kwargs
        fn = getattr(fn, "_autocast_original", fn)
        act = _activations().get(fn) if _hashable(fn) else None
        if act is not None:
            return _activation(act, node.args, node.kwargs)
        name = _FUNCTIONS.get(fn) if _hashable(fn) else None
        if name is not None:
            return name, node.args, node.kwargs
        row = _row_functions().get(fn) if _hashable(fn) else None
        if row is not None:
            return row, node.args, node.kwargs
        if fn is _bernoulli_at():
            return "random:bernoulli", node.args, node.kwargs
        if fn is softmax_grad:
            return "softmax_grad", node.args, node.kwargs
        return None
    if node.op == "call_method":
        name = node.target
        if name in _ROW_CODES:
            return "row:" + name, node.args, node.kwargs
        if name in _IDENTITY_METHODS and len(node.args) == 1 and not node.kwargs:
            return "identity", node.args, {}
        if name in _UNARY_NAMES or name in _BINARY_NAMES or name in _TERNARY_NAMES \
                or name in _CLAMPS or name == "sigmoid":
            if name == "where":                 # x.where(cond, y) is where(cond, x, y)
                if len(node.args) != 3 or node.kwargs:
                    return None
                return "where", (node.args[1], node.args[0], node.args[2]), {}
            return name, node.args, node.kwargs
    return None


_ACTIVATIONS = {}


def _activations():
    """The functions that are one-pass activation ops (or their gradients), by identity."""
    if not _ACTIVATIONS:
        from ..nn import functional as F
        _ACTIVATIONS.update({F.gelu: "gelu", F.silu: "silu", F.hardswish: "hardswish",
                             F.hardsigmoid: "hardsigmoid", _P.gelu_backward: "gelu_backward",
                             _P.silu_backward: "silu_backward",
                             _P.hardswish_backward: "hardswish_backward",
                             _P.hardsigmoid_backward: "hardsigmoid_backward"})
    return _ACTIVATIONS


def _activation(fn_name, args, kwargs):
    """(kernel op name, operands, {}) of a call of F.gelu/F.silu or of their gradients' ops,
    or None for a form the kernel op does not compute (silu in place, an unknown
    approximation)."""
    import inspect
    fn = next(f for f, n in _activations().items() if n == fn_name)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    a = bound.arguments
    if a.get("inplace", False) is not False or a.get("approximate", "none") not in ("none", "tanh"):
        return None
    tanh = a.get("approximate") == "tanh"
    if fn_name == "gelu":
        return ("gelu_tanh" if tanh else "gelu"), (a["input"],), {}
    if fn_name in ("silu", "hardswish", "hardsigmoid"):
        return fn_name, (a["input"],), {}
    grad_name = "gelu_tanh_backward" if tanh else fn_name
    return grad_name, (a["grad_output"], a["input"]), {}


_ROW_FUNCTIONS = {}


def _bernoulli_at():
    from ._random import bernoulli_at
    return bernoulli_at


def _row_functions():
    """The functions that are row ops, by identity -> "row:<op>" ("nn:" for nn.functional's
    softmax/log_softmax, whose third positional parameter is _stacklevel)."""
    if not _ROW_FUNCTIONS:
        from .._ops import reduction as R
        from .. import special
        from ..nn import functional as F
        for name in _ROW_CODES:
            _ROW_FUNCTIONS[getattr(R, name)] = "row:" + name
        for name in ("softmax", "log_softmax"):
            _ROW_FUNCTIONS[getattr(special, name)] = "row:" + name
            _ROW_FUNCTIONS[getattr(F, name)] = "nn:" + name
    return _ROW_FUNCTIONS


def softmax_grad(g, y, log=False):
    """The gradient of softmax (log_softmax when log) over the last dimension from its result
    y and the result's gradient g: y * (g - sum(g * y)), or g - exp(y) * sum(g), sums over
    rows.  The backward programs' form of it (torchlite.compile's _ROW_GRADS): traced, it is
    one node, lowered to one row instruction (SOFTMAX_BWD, the eager backward's row kernel);
    called on Tensors (the Python form of a backward), the eager kernel when no graph is
    recorded, else the formula's ops, differentiable again."""
    from ..fx.proxy import Proxy
    p = g if isinstance(g, Proxy) else y if isinstance(y, Proxy) else None
    if p is not None:
        return p.tracer.create_proxy("call_function", softmax_grad, (g, y, bool(log)), {})
    from .._ops.reduction_grad import softmax_backward
    if tuple(g.shape) != tuple(y.shape):        # a broadcast g: its value on the whole row
        g = g.expand(tuple(y.shape))
    return softmax_backward(g, y, -1, log)


def _read_softmax_grad(args, kwargs, dtype_of):
    """softmax_grad(g, y, log): g and y nodes of one float dtype, y of full rows (g's shape
    broadcasts to y's)."""
    if len(args) != 3 or kwargs or type(args[2]) is not builtins.bool:
        return None
    g, y, log = args
    if _number(g) or _number(y):
        return None
    dts = _operand_dtypes([y, g], dtype_of)
    if not dts or dts[0] not in FLOATS or dts[1] != dts[0]:
        return None
    # (the backward graphs' nodes may have no shapes: y is then a SOFTMAX result, of full rows)
    vy, vg = y.meta.get("val"), g.meta.get("val")
    if vy is not None and len(vy[0]) == 0:
        return None
    if vy is not None and vg is not None:
        try:
            from .._core.array import broadcast_shapes
            if tuple(broadcast_shapes(tuple(vy[0]), tuple(vg[0]))) != tuple(vy[0]):
                return None             # the result's rows are the instruction's rows
        except (RuntimeError, ValueError):
            return None
    return Ew(SOFTMAX_BWD, "log_softmax_grad" if log else "softmax_grad", [y, g], (), dts[0], dts[0])


def _zeros_like():
    from .._ops.creation import zeros_like
    return zeros_like


def _hashable(fn):
    try:
        hash(fn)
        return True
    except TypeError:
        return False


def classify(node, dtype_of, out_dtype=None):
    """The Ew of node, or None when it is not a fusable elementwise op.  dtype_of(arg) gives
    an operand node's dtype code; out_dtype (when known, from the capture) must agree with
    what the op computes, or the node is left alone."""
    c = _canonical(node)
    if c is None:
        return None
    name, args, kwargs = c
    if kwargs.get("out") is not None:
        return None
    e = _read(node, name, args, kwargs, dtype_of)
    if e is None or (out_dtype is not None and out_dtype != e.out):
        return None
    if e.kind in ("identity", "zeros", ROW, SOFTMAX, SOFTMAX_BWD, RANDOM):
        return e
    if not _ew.has_loop(e.kind, e.code, e.compute):
        return None
    return e


def _operand_dtypes(ops, dtype_of):
    dts = []
    for x in ops:
        if _number(x):
            continue
        if not hasattr(x, "op"):          # not a node: a tensor constant, a string, ...
            return None
        dt = dtype_of(x)
        if dt is None:
            return None
        dts.append(dt)
    return dts


def _read(node, name, args, kwargs, dtype_of):
    if name in ("identity", "zeros_like"):
        # a value passed on, or zeros of its shape and dtype (the gradient of a step)
        dt = dtype_of(args[0]) if hasattr(args[0], "op") else None
        if dt is None:
            return None
        e = Ew(UNARY, name, [args[0]], (), dt, dt)
        e.kind = "identity" if name == "identity" else "zeros"
        return e
    if name.startswith(("row:", "nn:")):
        return _read_row(name, args, kwargs, dtype_of)
    if name == "random:bernoulli":
        return _read_bernoulli(node, args, kwargs, dtype_of)
    if name == "softmax_grad":
        return _read_softmax_grad(args, kwargs, dtype_of)
    if name in _CLAMPS:
        return _read_clamp(name, args, kwargs, dtype_of)
    if name == "rsub":
        if len(args) != 2 or kwargs.get("alpha", 1) != 1:
            return None
        name, args, kwargs = "sub", (args[1], args[0]), {}
    if name in _UNARY_NAMES:
        if len(args) != 1 or kwargs:
            return None
        return _unary(_UNARY_NAMES[name], args[0], dtype_of)
    if name in ("sigmoid", "relu", "tanh") + _ACTIVATION_UNARY:
        if len(args) != 1 or kwargs:
            return None
        return _unary(name, args[0], dtype_of)
    if name in _BINARY_NAMES or name in _ON_BOOL:
        return _read_binary(name, args, kwargs, dtype_of)
    if name in _TERNARY_NAMES:
        return _read_ternary(name, args, kwargs, dtype_of)
    return None


def _unary(op, x, dtype_of):
    if _number(x):
        return None
    dts = _operand_dtypes([x], dtype_of)
    if dts is None:
        return None
    dt = dts[0]
    if dt == BOOL:
        if op in _ON_BOOL:
            return Ew(UNARY, _ON_BOOL[op], [x], (), BOOL, BOOL)
        return None
    if dt not in FLOATS or op in ("bitwise_not",):
        return None
    return Ew(UNARY, op, [x], (), dt, BOOL if op in _BOOL_OUT else dt)


def _read_row(name, args, kwargs, dtype_of):
    """A row op over the last dimension: sum/mean(x, -1, keepdim=True) or softmax/log_softmax
    (x, -1) with no dtype; None for any other form (it stays the eager op)."""
    form, op = name.split(":")
    args, kwargs = list(args), dict(kwargs)
    if form == "nn" and len(args) > 2:          # F.softmax(x, dim, _stacklevel, dtype)
        args = args[:2] + args[3:]
    kwargs.pop("_stacklevel", None)
    names = ("input", "dim", "keepdim") if op in ("sum", "mean") else ("input", "dim", "dtype")
    if len(args) > len(names) or any(k in kwargs for k in names[:len(args)]):
        return None
    bound = dict(zip(names, args), **kwargs)
    if set(bound) - set(names) - {"dtype"} or bound.get("dtype") is not None:
        return None
    x, dim = bound.get("input"), bound.get("dim")
    if op in ("sum", "mean"):
        if bound.get("keepdim") is not True:
            return None
        if isinstance(dim, (tuple, list)) and len(dim) == 1:
            dim = dim[0]
    if x is None or _number(x) or type(dim) is not builtins.int:
        return None
    dts = _operand_dtypes([x], dtype_of)
    if not dts or dts[0] not in FLOATS:
        return None
    v = x.meta.get("val")
    ndim = len(v[0]) if v is not None else None
    if ndim == 0 or not (dim == -1 or (ndim is not None and dim == ndim - 1)):
        return None
    return Ew(ROW if op in ("sum", "mean") else SOFTMAX, op, [x], (), dts[0], dts[0])


def _read_bernoulli(node, args, kwargs, dtype_of):
    """bernoulli_at(seed, base, p, shape, dtype) (compiler/_random.py): a mask of the node's
    shape drawn from the stream (seed, base), two int64 scalars."""
    if len(args) != 5 or kwargs:
        return None
    seed, base, p, shape, dtype = args
    if _number(seed) or _number(base) or _operand_dtypes([seed, base], dtype_of) != [I64, I64] \
            or type(p) is not builtins.float or getattr(dtype, "code", None) not in FLOATS:
        return None
    v = node.meta.get("val")
    if v is not None and tuple(v[0]) != tuple(shape):
        return None
    return Ew(RANDOM, "bernoulli", [seed, base], (p,), dtype.code, dtype.code)


def _read_clamp(name, args, kwargs, dtype_of):
    args = list(args)
    if name == "clamp_min":
        lo, hi = (args[1] if len(args) > 1 else kwargs.get("min")), None
    elif name == "clamp_max":
        lo, hi = None, (args[1] if len(args) > 1 else kwargs.get("max"))
    else:
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
    x = args[0]
    if (lo is None and hi is None) or not all(v is None or _number(v) for v in (lo, hi)):
        return None
    dts = _operand_dtypes([x], dtype_of)
    if not dts or dts[0] not in FLOATS:
        return None
    if any(v is not None and math.isnan(v) for v in (lo, hi)):
        return None                 # a NaN bound: the eager op's own rule
    lo = -math.inf if lo is None else builtins.float(lo)
    hi = math.inf if hi is None else builtins.float(hi)
    return Ew(UNARY, "clamp", [x], (lo, hi), dts[0], dts[0])


def _read_binary(name, args, kwargs, dtype_of):
    if len(args) != 2:
        return None
    a, b = args
    if _number(a) and _number(b):
        return None
    alpha = kwargs.get("alpha", 1)
    rounding = kwargs.get("rounding_mode")
    if set(kwargs) - {"alpha", "rounding_mode"}:
        return None
    op = _BINARY_NAMES.get(name, name)
    if op == "div" and rounding is not None:
        op = {"trunc": "div_trunc", "floor": "div_floor"}.get(rounding)
        if op is None:
            return None
    dts = _operand_dtypes([a, b], dtype_of)
    if dts is None:
        return None
    if all(d == BOOL for d in dts) and name in _ON_BOOL:
        if not all(isinstance(v, builtins.bool) or not _number(v) for v in (a, b)):
            return None
        return Ew(BINARY, _ON_BOOL[name], [a, b], (), BOOL, BOOL)
    dt = dts[0]
    if dt not in FLOATS or any(d != dt for d in dts) or op in ("shl", "shr") \
            or op.startswith("bitwise"):
        return None
    if op == "pow" and _number(b) and b == 2 and not isinstance(b, builtins.bool):
        return Ew(UNARY, "square", [a], (), dt, dt)         # as the eager pow does
    params = ()
    if alpha != 1:
        if op not in ("add", "sub") or not _number(alpha):
            return None
        params = (builtins.float(alpha) if op == "add" else -builtins.float(alpha),)
        op = "add_alpha"
    return Ew(BINARY, op, [a, b], params, dt, BOOL if op in _BOOL_OUT else dt)


def _read_ternary(name, args, kwargs, dtype_of):
    args = list(args)
    if name == "where":
        if len(args) != 3 or kwargs:
            return None
        c, x, y = args
        if _number(c):
            return None
        dts = _operand_dtypes([x, y], dtype_of)
        cdt = _operand_dtypes([c], dtype_of)
        if not dts or cdt != [BOOL] or dts[0] not in FLOATS or any(d != dts[0] for d in dts):
            return None
        return Ew(TERNARY, "where", [c, x, y], (), dts[0], dts[0])
    value = kwargs.get("value", 1)
    if set(kwargs) - {"value"} or len(args) != 3 or not _number(value):
        return None
    dts = _operand_dtypes(args, dtype_of)
    if not dts or dts[0] not in FLOATS or any(d != dts[0] for d in dts):
        return None
    if name == "lerp" and not (not _number(args[0]) and not _number(args[1])):
        return None
    params = (builtins.float(value),) if name != "lerp" else ()
    return Ew(TERNARY, name, args, params, dts[0], dts[0])


# ---- a region graph -> Program -------------------------------------------------------------------
class NotLowerable(Exception):
    """A node of the graph is not a fusable elementwise op."""


@dataclass(frozen=True)
class ProgramSpec:
    """A lowered program as plain data, exactly what Program(...) is built from: the inputs'
    dtype codes, the constants ((dtype, value) pairs), the scratch register count, the
    outputs' dtype codes and the instructions ((kind, op code, compute dtype, operands,
    params); operands: (slot kind, index, dtype), destination first).  The CPU interpreter
    runs it (program()); torchlite/cuda/_fused.py turns it into a CUDA kernel."""
    name: str
    in_dtypes: tuple
    consts: tuple
    n_scratch: int
    out_dtypes: tuple
    instrs: tuple
    compact: tuple = ()         # the instructions that run over one element per row

    def program(self):
        """The CPU interpreter's Program (torchlite/_core/fused.pyx) of this spec."""
        return Program(self.name, list(self.in_dtypes), list(self.consts), self.n_scratch,
                       list(self.out_dtypes), list(self.instrs), list(self.compact))


def build_program(name, graph, input_dtypes):
    """The Program of `graph` (placeholders, elementwise nodes, output of a tuple of nodes or
    numbers): returns (program, output dtypes).  input_dtypes: one dtype code per placeholder.
    Raises NotLowerable when a node is not an elementwise op."""
    spec = lower(name, graph, input_dtypes)
    return spec.program(), list(spec.out_dtypes)


def lower(name, graph, input_dtypes):
    """The ProgramSpec of `graph` (see build_program)."""
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    dtype = dict(zip(placeholders, input_dtypes))
    slot = {p: (0, i) for i, p in enumerate(placeholders)}        # value -> (kind, index)
    alias = {}              # identity -> its operand; zeros_like -> 0.0
    ops = []
    for n in graph.nodes:
        if n.op in ("placeholder", "output"):
            continue
        e = classify(n, dtype.get)
        if e is None:
            raise NotLowerable(f"{n.op} {getattr(n.target, '__name__', n.target)}")
        dtype[n] = e.out
        if e.kind == "identity":
            alias[n] = e.operands[0]
        elif e.kind == "zeros":
            alias[n] = 0.0
        else:
            ops.append((n, e))

    def root(v):
        while not _number(v) and v in alias:
            v = alias[v]
        return v
    out_node = next(n for n in graph.nodes if n.op == "output")
    outputs = out_node.args[0]
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    out_values = [root(o) for o in outputs]
    out_dtypes = [dtype[o] if not _number(o) else None for o in outputs]

    consts, const_index = [], {}

    def const(dt, v):
        key = (dt, builtins.bool(v) if dt == BOOL else repr(builtins.float(v)))
        if key not in const_index:
            const_index[key] = len(consts)
            consts.append((dt, builtins.bool(v) if dt == BOOL else builtins.float(v)))
        return (1, const_index[key], dt)

    # the steps: (value, kind, code, compute dtype, out dtype, operands, params, whether it is
    # an elementwise instruction over compact values)
    compact = set()
    spread = {}             # compact value -> the value of its spread along the rows
    out_spread = {}         # output index -> the spread written there (a compact output)
    steps = []
    for n, e in ops:
        srcs = [root(x) for x in e.operands]
        nodes = [r for r in srcs if not _number(r)]
        if e.kind == ROW or (e.kind not in (SOFTMAX, SOFTMAX_BWD) and nodes
                             and all(r in compact for r in nodes)):
            compact.add(n)
        if e.kind == ROW or n not in compact:       # reads full rows: spread compact operands
            for j, r in enumerate(srcs):
                if not _number(r) and r in compact:
                    if r not in spread:
                        _check_spread(r, dtype)
                        spread[r] = sp = _Spread(r)
                        dtype[sp] = dtype[r]
                        steps.append((sp, ROW, ROW_SPREAD, dtype[r], dtype[r], [r], (), False))
                    srcs[j] = spread[r]
        steps.append((n, e.kind, e.code, e.compute, e.out, srcs, e.params,
                      n in compact and e.kind != ROW))
        if n in compact:        # a compact output: spread into its output at once
            for k, v in enumerate(out_values):
                if v is n:
                    _check_spread(n, dtype)
                    sp = _Spread(n)
                    dtype[sp] = dtype[n]
                    out_spread[k] = sp
                    steps.append((sp, ROW, ROW_SPREAD, dtype[n], dtype[n], [n], (), False))

    last_use = {}
    for i, step in enumerate(steps):
        for r in step[5]:
            if not _number(r):
                last_use[r] = i
    out_slot = {sp: (3, k) for k, sp in out_spread.items()}
    for k, v in enumerate(out_values):
        if not _number(v) and v not in out_slot and v not in slot and v not in compact:
            out_slot[v] = (3, k)
    free, n_scratch, instrs, compact_instrs = [], 0, [], []
    for i, (n, kind, code, compute, out, operands, params, is_compact) in enumerate(steps):
        srcs = [const(compute, r) if _number(r) else slot[r] + (dtype[r],) for r in operands]
        # the scratch registers whose last reader this is may take the result when its
        # elements are as wide (a loop reads element i before writing element i; a wider
        # result would overwrite elements not read yet; a spread reads row r before it
        # writes rows r and up)
        now = []
        for r in operands:
            if not _number(r) and last_use.get(r) == i and slot[r][0] == 2 \
                    and slot[r] not in free and slot[r] not in now:
                now.append(slot[r])
                if _ITEMSIZE[dtype[r]] == _ITEMSIZE[out]:
                    free.append(slot[r])
        if n in out_slot:
            dst = out_slot[n]
        elif free:
            dst = free.pop()
        else:
            dst = (2, n_scratch)
            n_scratch += 1
        free.extend(r for r in now if r not in free and r != dst)
        slot[n] = dst
        if n not in last_use and n not in out_slot and dst[0] == 2:
            free.append(dst)
        if is_compact:
            compact_instrs.append(len(instrs))
        instrs.append((kind, code, compute, (dst + (out,),) + tuple(srcs), params))
    for k, v in enumerate(out_values):           # outputs no instruction wrote: copied
        dt = out_dtypes[k]
        if dt is None:
            raise NotLowerable("a number as an output")
        if _number(v):
            src = const(dt, v)
        elif out_slot.get(v) != (3, k) and k not in out_spread:
            src = slot[v] + (dtype[v],)
        else:
            continue
        instrs.append((CAST, dt, dt, ((3, k, dt), src), ()))
    if len(input_dtypes) > MAX_PROGRAM_INPUTS or len(out_dtypes) > MAX_PROGRAM_OUTPUTS \
            or len(input_dtypes) + len(out_dtypes) + len(consts) + n_scratch > MAX_PROGRAM_SLOTS:
        raise NotLowerable(f"{len(input_dtypes)} inputs, {len(out_dtypes)} outputs, {len(consts)} "
                           f"constants and {n_scratch} registers: more than a program holds")
    return ProgramSpec(name, tuple(input_dtypes), tuple(consts), n_scratch, tuple(out_dtypes),
                       tuple(instrs), tuple(compact_instrs))


def _check_spread(value, dtype):
    """A row value spread along its rows must be float32/float64 (the row instructions'
    types, in both the interpreter and the CUDA kernels): a bool one (`mean(x) > 0` used
    with full-shape values) leaves the region unfused."""
    if dtype[value] not in FLOATS:
        raise NotLowerable(f"a row value of dtype code {dtype[value]} spread along its rows")


class _Spread:
    """The spread of a compact value along its rows (a value of the lowering, not a node)."""

    __slots__ = ("of",)

    def __init__(self, of):
        self.of = of
