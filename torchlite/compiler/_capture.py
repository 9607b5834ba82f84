"""Graph capture for torchlite.compile: one real run of the model on value-carrying proxies
(jit.trace's tracer), traced through every submodule down to torchlite's functions.

A compiled graph is replayed for later calls whose inputs pass its guards (same shapes,
dtypes, devices, requires_grad, grad mode, training flags), so everything the run decides
from shapes may be fixed into it.  What it must not fix is anything decided from tensor
*values*: such a construct is a graph break (GraphBreak, naming the construct and the line),
and the caller runs that code eagerly instead:
- Python control flow on a tensor (`if x.sum() > 0`), `bool`/`int`/`float` of a tensor;
- `.item()`, `.tolist()`, `.numpy()`, printing or formatting a tensor, `print` at all;
- ops whose output shape depends on values (nonzero, unique, masked_select, boolean masks).

The run happens on clones of the inputs with the RNG state and the modules' buffers put
back afterwards, so capturing does not change what the call then computes (BatchNorm's
running statistics move once, dropout draws the masks eager would)."""
import builtins
import contextlib
import gc
import inspect
import operator
import threading
import warnings
import weakref

from .._size import Size
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad as _no_grad
from ..fx._symbolic_trace import _is_function
from ..fx.proxy import SymInt, _user_line
from ..jit._trace import _RunTracer, _ValueProxy

__all__ = ["GraphBreak", "capture", "size_layout", "with_sizes"]


class GraphBreak(Exception):
    """Code the compiler cannot capture into a graph; the message names the construct and the
    line of the user's code."""

    def __init__(self, construct, where=""):
        super().__init__(f"{construct}{where}")
        self.construct = construct
        self.where = where.strip()


_VALUE_METHODS = {"item": "Tensor.item()", "tolist": "Tensor.tolist()",
                  "numpy": "Tensor.numpy()", "__bool__": "bool() of a tensor",
                  "__int__": "int() of a tensor", "__float__": "float() of a tensor",
                  # autograd's side effects (the .grad it writes) are not values of the graph
                  "backward": "Tensor.backward()", "register_hook": "Tensor.register_hook()",
                  "retain_grad": "Tensor.retain_grad()"}


class Escaped(GraphBreak):
    """Tensors of the capture were kept outside the function (appended to a list, stored in a
    dict or a global): a side effect the graph cannot replay.  The function runs eagerly from
    then on; the capture's run counts as this call's, and `outputs` is what it returned."""

    def __init__(self, construct, outputs):
        super().__init__(construct)
        self.outputs = outputs
_DYNAMIC_SHAPE = {"nonzero", "unique", "unique_consecutive", "masked_select", "argwhere",
                  "nonzero_static", "bincount"}


class _CaptureProxy(_ValueProxy):
    """A value-carrying proxy that refuses to hand out its data."""

    __slots__ = ("__weakref__",)        # (the capture looks for the ones that escape)

    def __bool__(self):
        raise GraphBreak("data-dependent control flow (bool() of a tensor)", _user_line())

    def __int__(self):
        if isinstance(self.value, Tensor):
            raise GraphBreak("int() of a tensor", _user_line())
        return int(self.value)

    def __float__(self):
        if isinstance(self.value, Tensor):
            raise GraphBreak("float() of a tensor", _user_line())
        return float(self.value)

    def __index__(self):
        if isinstance(self.value, Tensor):
            raise GraphBreak("a tensor used as an index or size", _user_line())
        return self.value.__index__()

    # x += y on a traced tensor is the in-place op (Python would fall back to x = x + y)
    def _inplace(self, method, other):
        return self.tracer.create_proxy("call_method", method, (self, other), {})

    def __iadd__(self, other):
        return self._inplace("add_", other)

    def __isub__(self, other):
        return self._inplace("sub_", other)

    def __imul__(self, other):
        return self._inplace("mul_", other)

    def __itruediv__(self, other):
        return self._inplace("div_", other)

    def __ipow__(self, other):
        return self._inplace("pow_", other)

    def __iand__(self, other):
        return self._inplace("bitwise_and_", other)

    def __ior__(self, other):
        return self._inplace("bitwise_or_", other)

    def __len__(self):
        if self.tracer.symbolic_sizes:
            self.tracer.specialized.append("len() of a tensor")
        return len(self.value)

    def __iter__(self):
        if self.tracer.symbolic_sizes:
            self.tracer.specialized.append("iterating over a tensor")
        return super().__iter__()

    def __repr__(self):
        raise GraphBreak("printing or formatting a tensor", _user_line())

    __str__ = __repr__

    def __format__(self, spec):
        raise GraphBreak("printing or formatting a tensor", _user_line())


class _SizeSymbol(SymInt):
    """A symbolic size (dynamic=True): arithmetic on it stays in the graph; a decision made
    from its value (a comparison, range(n), bool) fixes the graph to that size, which the
    tracer notes so the graph is kept for that size only."""

    def _fixed(self, what):
        self.tracer.specialized.append(what)

    def __index__(self):
        self._fixed("a size used as a Python int (range, an index)")
        return int(self)

    def __bool__(self):
        self._fixed("a size used as a truth value")
        return int(self) != 0

    def __hash__(self):
        return int.__hash__(self)


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    def _compare(self, other, _op=getattr(int, _name), _name=_name):
        self._fixed(f"a size compared ({_name})")
        return _op(int(self), int(other) if isinstance(other, int) else other)
    setattr(_SizeSymbol, _name, _compare)

# every other use of a size's value as a number (int's own methods would hand out the
# capture's size unmarked): the graph is then kept for that size
for _name in ("__float__", "__truediv__", "__rtruediv__", "__pow__", "__rpow__", "__mod__",
              "__rmod__", "__neg__", "__pos__", "__abs__", "__round__", "__and__", "__rand__",
              "__or__", "__ror__", "__xor__", "__rxor__", "__lshift__", "__rlshift__",
              "__rshift__", "__rrshift__", "__divmod__", "__rdivmod__", "__trunc__",
              "__ceil__", "__floor__", "__str__", "__format__"):
    def _as_number(self, *args, _op=getattr(int, _name), _name=_name):
        self._fixed(f"a size used as a number ({_name})")
        return _op(int(self), *args)
    setattr(_SizeSymbol, _name, _as_number)


def set_grad_mode_(enabled):
    """Set grad mode (the replay of a grad-mode change the capture saw)."""
    from ..autograd.grad_mode import _state
    _state.enabled = enabled


def _print(*args, **kwargs):
    raise GraphBreak("print()", _user_line())


class CaptureTracer(_RunTracer):
    """jit.trace's tracer, traced through every module, with graph breaks where values would
    be read; each node's value is described in node.meta['val'] = (shape, dtype code,
    device, requires_grad)."""

    symint_class = _SizeSymbol
    _SAFE = frozenset({"dim", "ndimension", "is_floating_point", "is_complex", "is_contiguous",
                       "element_size", "get_device", "is_signed"})

    def __init__(self, dynamic=False):
        from ..autograd.grad_mode import _state
        super().__init__()
        self.symbolic_sizes = dynamic
        self.specialized = []           # why a dynamic capture depends on the sizes after all
        self._grad_state = _state
        self._grad_mode = _state.enabled
        self._foreign = {}              # id(tensor) -> the proxy of another module's parameter
        self._made = []                 # weak references to every value proxy made
        self.output_values = None       # what the traced function returned, as real values
        self.output_sizes = None        # where it returned torchlite.Size (see size_layout)
        self.foreign_modules = {}       # id -> a module outside the root the code used
        self.on_foreign = None          # called with each such module when first met

    def _proxy(self, node, value):
        p = _CaptureProxy(node, self, value)
        if node.op != "get_attr":       # (parameters' proxies stay in the tracer's caches)
            self._made.append(weakref.ref(p))
        return p

    def _traced_output(self, result):
        if _opaque_output(result):
            raise GraphBreak(f"returning a {type(result).__name__} holding tensors (the graph "
                             f"returns tensors in tuples, lists and dicts)")
        # a torchlite function the code returns (`act = F.relu` handed on by a split's first
        # piece) was the capture's recording stand-in, which would record into this dead
        # tracer when called later: the graph returns the function itself
        from ..fx.node import map_aggregate
        out = next(n for n in reversed(self.graph.nodes) if n.op == "output")
        out.args = map_aggregate(out.args, _unrecorded)
        self.output_values = _values_of(result)
        self.output_sizes = size_layout(result)

    def symbolic_shape(self, proxy, shape):
        """x.shape / x.size() as a torchlite.Size of symbolic sizes, as eager's is a Size."""
        return Size(super().symbolic_shape(proxy, shape))

    def _note_foreign(self, mod):
        """A module outside the root the code calls or reads a parameter of: the compiled
        callable guards on its state, and the capture puts its buffers back."""
        if id(mod) not in self.foreign_modules:
            self.foreign_modules[id(mod)] = mod
            if self.on_foreign is not None:
                self.on_foreign(mod)

    def escaped(self):
        """The value proxies still alive once the traced function returned: kept by the
        user's code somewhere outside it."""
        alive = [r() for r in self._made]
        if not any(p is not None for p in alive):
            return []
        del alive
        gc.collect()                    # (only what cycles alone kept)
        return [p for p in (r() for r in self._made) if p is not None]

    def is_leaf_module(self, m, module_qualified_name):
        return False

    def call_module(self, m, forward, args, kwargs):
        """Trace through m; a torchlite.nn layer whose forward does not take proxies (it checks
        its input's type, as the RNNs do, or a mask's) becomes one call_module node instead."""
        own = (type(m).__module__ or "").startswith("torchlite.nn")
        if not own:
            return super().call_module(m, forward, args, kwargs)
        mark = self.graph._root._prev           # the last node before the layer's own
        try:
            return super().call_module(m, forward, args, kwargs)
        except GraphBreak:
            raise
        except Exception:           # a real error shows again when the layer runs whole
            while self.graph._root._prev is not mark:
                self.graph.erase_node(self.graph._root._prev)
            return self.create_proxy("call_module", self.path_of_module(m), args, kwargs)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        # amp's wrapper of a function (installed once autocast was used) passes through when
        # autocast is off, as it is while a graph is captured or replayed: record the function
        target = getattr(target, "_autocast_original", target)
        self._record_grad_mode()
        if kind == "call_method" and target in _VALUE_METHODS:
            raise GraphBreak(_VALUE_METHODS[target], _user_line())
        tname = getattr(target, "__name__", target) if kind != "call_module" else ""
        if tname in _DYNAMIC_SHAPE or _data_sized(tname, args, kwargs):
            raise GraphBreak(f"{tname}(), whose output shape depends on the data", _user_line())
        if kind in ("call_function", "call_method") and _writes_outside(args, kwargs):
            raise GraphBreak(f"{tname}() writing into a tensor the compiled code does not hold "
                             f"(out= or inplace=True on a global or a closure's tensor)", _user_line())
        if kind == "call_function" and target is operator.getitem and _bool_index(args):
            raise GraphBreak("indexing with a boolean mask (the output shape depends on the "
                             "data)", _user_line())
        if kind == "call_function" and target is builtins.getattr and len(args) == 2 \
                and args[1] in ("data", "grad"):
            raise GraphBreak(f"Tensor.{args[1]}", _user_line())
        r = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        if self.symbolic_sizes and kind == "call_method" and target not in self._SAFE \
                and isinstance(r, (int, float)) and not isinstance(r, SymInt):
            self.specialized.append(f"Tensor.{target}() (a number read from sizes)")
        return r

    def _wrap(self, node, value):
        if isinstance(value, Tensor):
            node.meta["val"] = _describe(value)
            return self._proxy(node, value)
        if isinstance(value, (tuple, list)):
            return super()._wrap(node, value)
        return self._proxy(node, value)

    def attr_proxy(self, node, value):
        if isinstance(value, Tensor):
            node.meta["val"] = _describe(value)
        return self._proxy(node, value)

    def _placeholders(self, fn, bound_self, concrete_args):
        args = super()._placeholders(fn, bound_self, concrete_args)
        out = []
        for a in args:
            if isinstance(a, _ValueProxy) and not isinstance(a, _CaptureProxy):
                a.node.meta["val"] = _describe(a.value)
                a = self._proxy(a.node, a.value)
            out.append(a)
        return out

    def _patch(self, patcher):
        import sys
        from ..nn.modules.module import Module
        public = _public_functions(self.patched_namespaces)
        super()._patch(patcher)
        patcher.set(builtins, "print", _print)
        self._patch_size_readers(patcher)
        # torchlite's functions record even when no argument is traced (torch.zeros(3),
        # torch.randn(2)): each call makes its tensor anew, as eager does
        for path in self.patched_namespaces:
            mod = sys.modules.get(path)
            if mod is not None:
                for name, v in list(vars(mod).items()):
                    original = getattr(v, "_fx_original", None)
                    if original is not None and original in public:
                        rec = self._recording(original)
                        patcher.set(mod, name, rec)
                        self._replacements[id(original)] = (original, rec)
        # torchlite functions kept as module attributes (a layer's `activation`) record too
        for m in self.root.modules():
            for name, v in list(vars(m).items()):
                if _hashable(v) and v in public:
                    patcher.set(m, name, self._recording(v))
        self._patch_foreign_parameters(patcher, Module)
        self._patch_inplace_methods(patcher)
        self._patch_module_setattr(patcher, Module)
        self._patch_autograd(patcher)

    def _patch_size_readers(self, patcher):
        """range() and the math module read a symbolic size's value without asking it (C
        code takes an int subclass as an int): called with one, they fix the graph to the
        capture's sizes (tracer.specialized), as the size's own conversions do."""
        import math
        if not self.symbolic_sizes:
            return
        tracer = self

        def marking(fn, what):
            def reader(*args, **kwargs):
                if any(isinstance(a, _SizeSymbol) for a in args):
                    tracer.specialized.append(f"a size passed to {what}")
                return fn(*args, **kwargs)
            return reader
        patcher.set(builtins, "range", marking(range, "range()"))
        for name in ("sqrt", "log", "log2", "log10", "exp", "pow", "ceil", "floor", "trunc",
                     "isqrt", "gcd", "lcm", "prod", "comb", "perm", "factorial", "fsum", "hypot"):
            fn = getattr(math, name, None)
            if fn is not None:
                patcher.set(math, name, marking(fn, f"math.{name}()"))

    def _patch_autograd(self, patcher):
        """What works on autograd's graph or on tensors outside the capture's: torch.autograd
        .grad / backward (gradients written or returned outside the graph; Tensor.backward is
        one of _VALUE_METHODS), a custom autograd.Function (its backward is not part of the
        graph; checkpoint is one) and an optimizer's step (the parameters it updates are not
        values of the graph): graph breaks, so the function runs eagerly."""
        import torchlite.autograd as autograd
        from ..autograd.function import Function
        from ..optim import optimizer
        tracer = self

        def capturing():
            return not tracer._suspended and threading.get_ident() == tracer._thread
        for name in ("grad", "backward"):
            original = getattr(autograd, name)

            def guarded(*args, _original=original, _name=name, **kwargs):
                if capturing():
                    raise GraphBreak(f"torch.autograd.{_name}()", _user_line())
                return _original(*args, **kwargs)
            patcher.set(autograd, name, guarded)
        apply = Function.__dict__["apply"].__func__

        def guarded_apply(cls, *args, **kwargs):
            if capturing():
                raise GraphBreak(f"{cls.__name__}.apply() (a custom autograd.Function)", _user_line())
            return apply(cls, *args, **kwargs)
        patcher.set(Function, "apply", classmethod(guarded_apply))

        def step_guard(opt, args, kwargs):
            if capturing():
                raise GraphBreak(f"{type(opt).__name__}.step() (an optimizer updates tensors "
                                 f"outside the graph)", _user_line())
        patcher.set(optimizer, "_global_step_pre_hooks",
                    list(optimizer._global_step_pre_hooks) + [step_guard])
        # what sets or clears a .grad changes tensors outside the graph too (a replayed graph
        # would leave the gradients of the previous step to accumulate)
        from ..nn.modules.module import Module
        for cls in (optimizer.Optimizer, Module):
            zero_grad = cls.zero_grad

            def guarded_zero_grad(obj, *args, _original=zero_grad, **kwargs):
                if capturing():
                    raise GraphBreak(f"{type(obj).__name__}.zero_grad() (it resets gradients "
                                     f"outside the graph)", _user_line())
                return _original(obj, *args, **kwargs)
            patcher.set(cls, "zero_grad", guarded_zero_grad)
        grad = Tensor.__dict__["grad"]

        def set_grad(t, value):
            if capturing():
                raise GraphBreak("assigning a tensor's .grad (outside the graph)", _user_line())
            grad.__set__(t, value)

        def del_grad(t):
            if capturing():
                raise GraphBreak("deleting a tensor's .grad (outside the graph)", _user_line())
            grad.__delete__(t)
        patcher.set(Tensor, "grad", property(grad.fget, set_grad, del_grad, grad.__doc__))
        self._patch_state_setters(patcher, capturing)

    def _patch_state_setters(self, patcher, capturing):
        """Seeding or restoring the RNG, and entering autocast, change how the ops after them
        run, which the graph does not record: graph breaks."""
        import sys
        from .._ops import random as _random
        from ..amp import autocast_mode

        def breaking(fn, what):
            def guarded(*args, **kwargs):
                if capturing():
                    raise GraphBreak(what, _user_line())
                return fn(*args, **kwargs)
            return guarded
        for name in ("manual_seed", "seed", "set_rng_state", "fork_rng"):
            original = getattr(_random, name)
            for mod in (sys.modules.get("torchlite"), sys.modules.get("torchlite.random"), _random):
                if mod is not None and getattr(mod, name, None) is not None:
                    patcher.set(mod, name, breaking(original, f"torch.{name}()"))
        for name in ("manual_seed", "set_state", "seed"):
            original = _random.Generator.__dict__.get(name) or getattr(_random.Generator, name, None)
            if original is not None:
                patcher.set(_random.Generator, name, breaking(original, f"Generator.{name}()"))
        enter = autocast_mode.autocast.__enter__

        def autocast_enter(ctx):
            if ctx._enabled and capturing():
                raise GraphBreak("entering torch.autocast", _user_line())
            return enter(ctx)
        patcher.set(autocast_mode.autocast, "__enter__", autocast_enter)

    def _record_grad_mode(self):
        """A grad-mode change (a `with torch.no_grad():` block) becomes a node setting the mode
        before the next op, so the replay runs each op under the mode it ran under."""
        mode = self._grad_state.enabled
        if mode != self._grad_mode:
            self.create_node("call_function", set_grad_mode_, (mode,), {})
            self._grad_mode = mode

    def trace(self, root, concrete_args=None):
        graph = super().trace(root, concrete_args)
        end = self._grad_state.enabled      # the mode the code left (a block left, or a
        if self._grad_mode != end:          # set_grad_enabled that stays): the replay too
            out = next(n for n in graph.nodes if n.op == "output")
            with graph.inserting_before(out):
                graph.create_node("call_function", set_grad_mode_, (end,), {})
        return graph

    def _recording(self, fn):
        """fn recording a call_function node when it takes a traced value or returns a
        tensor (a factory or a random draw, remade on every call)."""
        tracer = self

        def record(*args, **kwargs):
            if tracer._suspended or threading.get_ident() != tracer._thread:
                return fn(*args, **kwargs)
            if _has_proxy(args, kwargs):
                return tracer.create_proxy("call_function", fn, args, kwargs)
            if _writes_outside(args, kwargs):
                raise GraphBreak(f"{fn.__name__}() writing into a tensor the compiled code does "
                                 f"not hold (out= or inplace=True on a global or a closure's "
                                 f"tensor)", _user_line())
            tracer._suspended = True
            try:
                value = fn(*args, **kwargs)
            finally:
                tracer._suspended = False
            if isinstance(value, Tensor):
                node = tracer.create_node("call_function", fn, tracer.create_arg(args),
                                          tracer.create_arg(kwargs))
                return tracer._wrap(node, value)
            return value
        record._fx_original = fn
        record._tl_recording = True
        return record

    def _patch_foreign_parameters(self, patcher, Module):
        """Parameters and buffers of modules outside the root (a global model a compiled
        function calls) are read live by the graph, not fixed at their capture values."""
        tracer = self
        inner = Module.__getattr__

        def module_getattr(mod, name):
            value = inner(mod, name)
            if isinstance(value, Tensor) and not tracer._suspended \
                    and threading.get_ident() == tracer._thread \
                    and id(mod) not in tracer._module_paths \
                    and (name in mod._parameters or name in mod._buffers):
                tracer._note_foreign(mod)
                proxy = tracer._foreign.get(id(value))
                if proxy is None:
                    proxy = tracer._foreign[id(value)] = tracer.attr_proxy(
                        tracer._tensor_attr(value), value)
                return proxy
            return value
        patcher.set(Module, "__getattr__", module_getattr)
        call = Module.__call__          # (the tracer's own, already in place)

        def module_call(mod, *args, **kwargs):
            if id(mod) not in tracer._module_paths and not tracer._suspended \
                    and threading.get_ident() == tracer._thread:
                tracer._note_foreign(mod)
            return call(mod, *args, **kwargs)
        patcher.set(Module, "__call__", module_call)

    def _patch_inplace_methods(self, patcher):
        """An in-place op on a tensor the graph does not hold (a global, a closure's tensor)
        would happen once, at capture: a graph break instead."""
        tracer = self
        names = [n for n in dir(Tensor) if (n.endswith("_") and not n.endswith("__") and
                                            not n.startswith("_")) or n in _INPLACE_DUNDERS]
        for name in names:
            original = Tensor.__dict__.get(name)
            if original is None or not callable(original):
                continue

            def guarded(self, *args, _original=original, _name=name, **kwargs):
                if not tracer._suspended and threading.get_ident() == tracer._thread:
                    raise GraphBreak(f"Tensor.{_name} on a tensor the compiled code does not "
                                     f"hold (a global or a closure's tensor)", _user_line())
                return _original(self, *args, **kwargs)
            patcher.set(Tensor, name, guarded)

    def _patch_module_setattr(self, patcher, Module):
        """Assigning a module attribute inside the code (a counter, a first-call flag, a tensor)
        would happen once, at capture: a graph break, raised before the assignment."""
        tracer = self
        original = Module.__setattr__

        def module_setattr(mod, name, value):
            if threading.get_ident() == tracer._thread and not tracer._suspended:
                current = mod._buffers.get(name, mod._parameters.get(name, mod.__dict__.get(name)))
                if isinstance(value, _ValueProxy):
                    if current is value.value:      # x += 1 on a buffer: already done in place
                        return
                    raise GraphBreak(f"assigning a tensor to the module attribute {name!r}",
                                     _user_line())
                if current is not value:
                    raise GraphBreak(f"assigning the module attribute {name!r}", _user_line())
            original(mod, name, value)
        patcher.set(Module, "__setattr__", module_setattr)


_INPLACE_DUNDERS = {"__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                    "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
                    "__ilshift__", "__irshift__"}


def _data_sized(name, args, kwargs):
    """Calls whose output size depends on the data beyond _DYNAMIC_SHAPE: where(condition)
    (nonzero's), repeat_interleave with a tensor of repeats."""
    if name == "where":
        return len(args) + len(kwargs) == 1
    if name == "repeat_interleave":
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        return isinstance(repeats, (Tensor, _ValueProxy)) or (len(args) == 1 and not kwargs)
    return False


def _writes_outside(args, kwargs):
    """out= into, or inplace=True on, a tensor the graph does not hold (a global): the write
    would happen once, at capture."""
    out = kwargs.get("out")
    for o in (out if isinstance(out, (tuple, list)) else (out,)):
        if isinstance(o, Tensor):
            return True
    if kwargs.get("inplace") is True:
        first = args[0] if args else kwargs.get("input")
        return isinstance(first, Tensor)
    return False


def _has_proxy(args, kwargs):
    from ..fx._symbolic_trace import _find_proxy
    return _find_proxy(args, kwargs) is not None


def _public_functions(namespaces):
    import sys
    found = set()
    for path in namespaces:
        mod = sys.modules.get(path)
        if mod is not None:
            found.update(v for k, v in vars(mod).items()
                         if not k.startswith("_") and _is_function(v))
    return found


def _hashable(v):
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _bool_index(args):
    from .._tensor import Tensor as T
    idx = args[1] if len(args) > 1 else None
    items = idx if isinstance(idx, tuple) else (idx,)
    for i in items:
        v = i.value if isinstance(i, _ValueProxy) else i
        if isinstance(v, T) and v._data.dtype == 0 and v.ndim > 0:
            return True
    return False


def _opaque_output(v):
    """Whether the returned value holds traced values inside something the graph's output
    cannot rebuild (a namedtuple, a dataclass or another object)."""
    if isinstance(v, _ValueProxy) or v is None or isinstance(v, (bool, int, float, str)):
        return False
    if type(v) in (tuple, list):
        return any(_opaque_output(e) for e in v)
    if type(v) is dict:
        return any(_opaque_output(e) for e in v.values())
    if isinstance(v, (tuple, list)):            # a namedtuple, a list subclass
        return any(_holds_proxy(e) for e in v)
    return _holds_proxy(getattr(v, "__dict__", {})) or _holds_proxy(
        [getattr(v, k, None) for k in getattr(type(v), "__slots__", ())])


def _unrecorded(v):
    return v._fx_original if getattr(v, "_tl_recording", False) else v


_ATOMS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), slice, range)


def shared_output(v):
    """What in a graph's returned value v the graph would hand back as one and the same
    object on every call where the code makes a new one each time (a SimpleNamespace, a set,
    an instance of a class of the user's, made by the code and kept by the graph as a
    constant), or None.  Lists and dicts are rebuilt on every call, tensors are the graph's;
    numbers, strings, dtypes, devices, functions, classes and modules are shared harmlessly.
    The first piece of a split function hands its variables over this way, and the breaking
    statement may change them (`ns.k += 1`), so that piece runs eagerly when this is not
    None."""
    import types as _types
    from .._dtype import dtype as _dtype_class
    if isinstance(v, (_ValueProxy, Tensor, SymInt)) or type(v) in _ATOMS:
        return None
    if type(v) in (tuple, list, Size) or (isinstance(v, tuple) and hasattr(v, "_fields")):
        return next((w for w in map(shared_output, v) if w is not None), None)
    if type(v) is dict:
        return next((w for w in map(shared_output, v.values()) if w is not None), None)
    from ..nn.modules.module import Module
    if isinstance(v, (_dtype_class, type, _types.ModuleType, _types.FunctionType,
                      _types.BuiltinFunctionType, _types.MethodType, Module)) \
            or type(v).__name__ in ("device", "cython_function_or_method"):
        return None
    return f"a {type(v).__name__} handed on by the graph"


def _holds_proxy(v):
    if isinstance(v, _ValueProxy):
        return True
    if isinstance(v, (tuple, list)):
        return any(_holds_proxy(e) for e in v)
    if isinstance(v, dict):
        return any(_holds_proxy(e) for e in v.values())
    return False


def _values_of(v):
    """v with each value proxy replaced by its value and each symbolic size by its number
    (in tuples, lists and dicts)."""
    if isinstance(v, _ValueProxy):
        return v.value
    if isinstance(v, SymInt):
        return int.__int__(v)
    if isinstance(v, (tuple, list)):
        items = [_values_of(e) for e in v]
        return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)
    if isinstance(v, dict):
        return type(v)((k, _values_of(e)) for k, e in v.items())
    return _unrecorded(v)


_SIZE = "Size"      # size_layout's mark of a torchlite.Size


def size_layout(v):
    """Where a returned value holds a torchlite.Size (x.shape, x.size(), x.shape[1:]), in the
    tuples, lists and dicts the graph's output rebuilds as plain tuples: None where it holds
    none (so a graph that returns no size pays nothing), _SIZE for a Size, else the layout of
    each element (a list, or a dict by key)."""
    if isinstance(v, Size):
        return _SIZE
    if isinstance(v, (tuple, list)):
        inner = [size_layout(e) for e in v]
        return inner if any(e is not None for e in inner) else None
    if isinstance(v, dict):
        inner = {k: size_layout(e) for k, e in v.items()}
        return inner if any(e is not None for e in inner.values()) else None
    return None


def with_sizes(v, layout):
    """A graph's output v with the plain tuples that stand for sizes made torchlite.Size again."""
    if layout is None:
        return v
    if layout is _SIZE:
        return Size(v)
    if isinstance(v, dict):
        return type(v)((k, with_sizes(e, layout.get(k))) for k, e in v.items())
    items = [with_sizes(e, e_layout) for e, e_layout in zip(v, layout)]
    return type(v)(*items) if hasattr(v, "_fields") else type(v)(items)


def _release(proxies):
    """Put each escaped proxy's value where the user's code put the proxy: the lists, dicts
    (a global, an attribute, a dict of the user's) and sets that hold it."""
    for p in proxies:
        for r in gc.get_referrers(p):
            if type(r) is list:
                for i, e in enumerate(r):
                    if e is p:
                        r[i] = p.value
            elif isinstance(r, dict):
                for k, e in list(r.items()):
                    if e is p:
                        r[k] = p.value
            elif type(r) is set:
                r.discard(p)
                r.add(p.value)


def _describe(t):
    return (tuple(t._data.shape), t._data.dtype, str(t.device), t._requires_grad)


@contextlib.contextmanager
def _untouched(modules, keep):
    """Put back the RNG state (the CPU's and the CUDA devices') and every buffer of `modules`
    after the block (unless keep[0] was set in it: the capture's run stands as a call)."""
    from .. import _dispatch
    from .._ops.random import get_rng_state
    rng = get_rng_state()
    device_rng = _dispatch.devices.generator_states() if _dispatch.backend_loaded() else None
    saved = []
    seen = set()

    def snapshot(module):
        for m in module.modules():
            if id(m) in seen:
                continue
            seen.add(id(m))
            for name, b in m._buffers.items():
                if b is not None:
                    saved.append((m, name, b, b.detach().clone()))
    for m in modules:
        snapshot(m)
    try:
        yield snapshot
    finally:
        if not keep[0]:
            _restore(rng, device_rng, saved)


def _host_rng_state():
    """Python's random module's state, and NumPy's global generator's when NumPy is loaded:
    a number the code draws from them is a constant of the graph, so a capture that drew one
    is a graph break (torchlite's own generator is recorded instead)."""
    import random
    import sys
    np = sys.modules.get("numpy")
    if np is None:
        return random.getstate(), None
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    return random.getstate(), (kind, key.tobytes(), pos, has_gauss, gauss)


@contextlib.contextmanager
def _host_rng_untouched(state, keep):
    """Put back the host generators' state after the block (a graph break that drew from
    them runs eagerly and draws what eager would), unless keep[0] was set in it."""
    try:
        yield
    finally:
        if not keep[0] and _host_rng_state() != state:
            import random
            import sys
            random.setstate(state[0])
            if state[1] is not None:
                kind, key, pos, has_gauss, gauss = state[1]
                np_module = sys.modules["numpy"]
                np_module.random.set_state((kind, np_module.frombuffer(key, dtype=np_module.uint32),
                                            pos, has_gauss, gauss))


def _restore(rng, device_rng, saved):
    from .. import _dispatch
    from .._ops.random import set_rng_state
    set_rng_state(rng)
    if device_rng is not None:
        _dispatch.devices.set_generator_states(device_rng)
    with _no_grad():
        for m, name, b, copy in saved:
            if m._buffers.get(name) is not b:
                m._buffers[name] = b
            b.copy_(copy)


def capture(fn, args, kwargs, dynamic=False):
    """The fx Graph of one run of fn (a Module or a function) on args/kwargs, the tracer (its
    `specialized` says whether a dynamic capture fixed sizes after all) and how the graph's
    function takes its inputs: ('args', n), or ('bind', signature) when keyword arguments or
    defaults are involved (the call is bound to the parameters, defaults applied, and passed
    by position).  dynamic: sizes read from the inputs stay symbolic.  Raises GraphBreak."""
    from ..nn.modules.module import Module
    forward = fn.forward if isinstance(fn, Module) else fn
    sig = inspect.signature(forward)
    params = list(sig.parameters.values())
    simple = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    if kwargs or (simple and len(args) < len(params)):
        if not simple:
            raise GraphBreak("keyword arguments to a function with keyword-only or variadic "
                             "parameters")
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        call_args = tuple(bound.arguments[p.name] for p in params)
        layout = ("bind", sig)
    else:
        call_args, layout = tuple(args), ("args", len(args))
    for v in call_args:
        _check_input(v)
    clones = tuple(_clone(a) for a in call_args)
    modules = list(fn.modules()) if isinstance(fn, Module) else []
    tracer = CaptureTracer(dynamic)
    keep = [False]
    host_rng = _host_rng_state()
    with _untouched(modules, keep) as snapshot, _host_rng_untouched(host_rng, keep):
        tracer.on_foreign = snapshot                # (under the call's grad mode: code may
        graph = tracer.trace_run(fn, clones, None)  # branch on it)
        if _host_rng_state() != host_rng:
            raise GraphBreak("a draw from Python's random module or NumPy's global generator "
                             "(the graph would keep the capture's numbers)")
        escaped = tracer.escaped()
        if escaped:
            _release(escaped)
            what = ("a tensor of the compiled code kept outside it (in a list, a dict or a "
                    "global)")
            if any(isinstance(a, Tensor) and a.requires_grad for a in call_args):
                # the capture's values hang from copies of the inputs, not from the inputs:
                # the call runs again, eagerly, so gradients reach them
                warnings.warn(f"torchlite.compile: {what}; the first call ran twice (captured, "
                              f"then eagerly), so its side effects happened twice")
                raise GraphBreak(what, _user_line())
            keep[0] = True              # the capture's run is this call's
            for a, c in zip(call_args, clones):
                if isinstance(a, Tensor) and c._version != 0:        # written in place
                    with _no_grad():
                        a.copy_(c)
            raise Escaped(what, tracer.output_values)
    return graph, tracer, layout


def bind_call(sig, args, kwargs):
    """The positional arguments of a call, bound to sig's parameters with defaults applied."""
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())


def _clone(v):
    if not isinstance(v, Tensor):
        return v
    c = v.detach().clone()
    return c.requires_grad_() if v.requires_grad and c.is_floating_point() else c


def _check_input(v):
    """Inputs are tensors or constants the guards compare by value."""
    if isinstance(v, Tensor) or v is None or isinstance(v, (bool, int, float, str)):
        return
    if isinstance(v, tuple) and all(not isinstance(e, (Tensor, list, dict, tuple)) for e in v):
        return
    raise GraphBreak(f"an argument of type {type(v).__name__} (compiled calls take tensors "
                     f"and constants)")
