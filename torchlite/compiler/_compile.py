"""What a compiled callable does on each call: check the guards, find (or build) the compiled
graph for them, run it; or run eagerly where the code cannot be captured.

Guards.  A compiled graph is specialised on what its capture fixed: each tensor argument's
shape, dtype, device and requires_grad, the other arguments' values, grad mode, the default
dtype and every submodule's training flag.  The key of those is looked up in a per-callable
cache; a miss compiles again, up to config.cache_size_limit entries, after which new keys run
eagerly with a warning (PyTorch's recompile limit).

Graph breaks.  When the capture meets a construct it cannot record (_capture.GraphBreak),
fullgraph=True raises torchlite._dynamo.exc.Unsupported naming it and its line.  Otherwise
the call runs around the break: the breaking function's own code runs eagerly, and each
submodule it calls is compiled on its own (recursively, so the break shrinks to the smallest
module that holds it).  explain() reports the graphs and the breaks."""
from __future__ import annotations

import contextlib
import inspect
import threading
import warnings
import weakref

from .._tensor import Tensor
from ..autograd.grad_mode import _state as _grad_state
from . import _capture, _fusion, _passes, _log
from ._config import config

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["Compiled", "reset", "is_compiling"]

_local = threading.local()
_all_compiled = weakref.WeakSet()      # for reset(): every Compiled alive


def is_compiling() -> bool:
    """True while torchlite.compile captures a graph (PyTorch's torch.compiler.is_compiling)."""
    return getattr(_local, "capturing", 0) > 0


@contextlib.contextmanager
def _capturing():
    _local.capturing = getattr(_local, "capturing", 0) + 1
    try:
        yield
    finally:
        _local.capturing -= 1


def _disabled():
    return getattr(_local, "disabled", 0) > 0


@contextlib.contextmanager
def disabled():
    """Run compiled callables eagerly inside the block (torch.compiler.disable's context)."""
    _local.disabled = getattr(_local, "disabled", 0) + 1
    try:
        yield
    finally:
        _local.disabled -= 1


class _Eager:
    """A cache entry for a key whose code runs eagerly (a graph break), with its submodules
    compiled on their own."""

    def __init__(self, owner, reason):
        self.owner, self.reason = owner, reason

    def __call__(self, args, kwargs):
        return self.owner._run_split(args, kwargs)


class _Done:
    """The result of a call the capture itself ran (see _capture.Escaped); not cached."""

    def __init__(self, outputs):
        self.outputs = outputs

    def __call__(self, args, kwargs):
        return self.outputs


class _Graph:
    """A cache entry: the compiled function of one captured graph."""

    def __init__(self, fn, root, layout, graph, kernels):
        self.fn, self.root, self.layout = fn, root, layout
        self.graph, self.kernels = graph, kernels

    def __call__(self, args, kwargs):
        _record_event("graph", self)
        if self.layout[0] == "args":
            return self.fn(self.root, *args)
        return self.fn(self.root, *_capture.bind_call(self.layout[1], args, kwargs))


class Compiled:
    """A compiled module or function (what torchlite.compile returns for a function, and what
    OptimizedModule and Module.compile call)."""

    def __init__(self, target: Module | Callable[..., Any], *, fullgraph: bool = False,
                 dynamic: bool | None = None, mode: str | None = None, backend: str | Callable[..., Any] = "inductor",
                 options: dict[str, Any] | None = None) -> None:
        from ..nn.modules.module import Module
        self.target = target
        self.module = target if isinstance(target, Module) else _bound_module(target)
        self.fullgraph, self.dynamic, self.mode = fullgraph, dynamic, mode
        self.backend = backend
        self.options = dict(options or {})
        self.cache = {}                 # guards (sizes included) -> entry
        self.dynamic_cache = {}         # guards without sizes -> entry of a dynamic capture
        self._static_shapeless = set()  # the size-free keys of the static entries
        self._static_examples = {}      # size-free key -> the arguments' shapes of a static entry
        self._warned_limit = False
        self._child_compiled = {}       # id(submodule) -> Compiled, for graph breaks
        # what the captures found the code reading outside its arguments, guarded on every
        # call (see _world): modules outside the root, and the globals and closure cells of
        # its code holding numbers, strings, tensors or small containers of them
        self._foreign_modules = {}      # id -> module
        self._free_values = {}          # (kind, id of the dict or cell, name) -> reader
        _all_compiled.add(self)
        self.__name__ = getattr(target, "__name__", type(target).__name__)
        self.__doc__ = getattr(target, "__doc__", None)
        self.__wrapped__ = target

    def __getstate__(self) -> dict[str, Any]:
        """Copied or pickled without its compiled graphs (kernels and guard readers are this
        process's): the copy compiles again on its first call."""
        state = self.__dict__.copy()
        for name in ("cache", "dynamic_cache", "_child_compiled", "_static_examples",
                     "_foreign_modules", "_free_values"):
            state[name] = {}
        state["_static_shapeless"] = set()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _all_compiled.add(self)

    # ---- the call --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _disabled() or is_compiling() or _autocast_on():
            return self._eager(args, kwargs)
        try:
            key = self._key(args, kwargs)
        except TypeError:       # an argument with nothing to guard on, or a module with hooks
            return self._eager(args, kwargs)
        entry = self.cache.get(key)
        if entry is None:
            if self.dynamic_cache:          # a graph for any sizes of these ranks and dtypes
                entry = self.dynamic_cache.get(self._key(args, kwargs, sizes=False))
            if entry is None:
                entry = self._compile(key, args, kwargs)
        return entry(args, kwargs)

    def _eager(self, args, kwargs):
        if self.module is not None:
            return self.module._call_impl(*args, **kwargs)
        return self.target(*args, **kwargs)

    def _key(self, args, kwargs, sizes=True):
        from .. import _dtype
        parts = [_grad_state.enabled, _dtype.get_default_dtype()]
        for a in args:
            parts.append(_guard(a, sizes))
        for k in sorted(kwargs):
            parts.append((k, _guard(kwargs[k], sizes)))
        from ..nn.modules.module import _any_global_hook
        if _any_global_hook():
            raise TypeError("global module hooks")
        parts.append(self._world())
        key = tuple(parts)
        hash(key)
        return key

    def _world(self):
        """The state outside the arguments that a graph depends on, as a key: the module tree
        of the root and of each outside module the code uses (every submodule by identity, so
        a replaced layer is a new key, its training flag, the identity of each parameter,
        buffer and tensor attribute, so a replaced or removed one is too; hooks, which the
        graph would skip, make the call eager), and the values of the globals and closure
        cells the code reads (numbers, strings and small containers of them by value, tensors
        by identity)."""
        trees = [self.module] if self.module is not None else []
        trees += self._foreign_modules.values()
        mods = []
        for tree in trees:
            for m in tree.modules():
                if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks \
                        or m._backward_pre_hooks:
                    raise TypeError("a module with hooks")
                mods.append((id(m), m.training, tuple(map(id, m._parameters.values())),
                             tuple(map(id, m._buffers.values())), _plain_attributes(m)))
        free = tuple(read() for read in self._free_values.values())
        return tuple(mods), free

    def _learn_modules(self, tracer):
        """After a capture: the modules outside the root it found the code using."""
        for m in tracer.foreign_modules.values():
            if m is not self.module:
                self._foreign_modules.setdefault(id(m), m)

    def _learn_code(self, root):
        """Before a capture: the globals and closure cells the code may read (its code
        object's names; a capture may change them, so they are read first)."""
        fn = type(root).forward if self.module is not None and root is self.module else root
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return
        g = getattr(fn, "__globals__", {})
        for name in _names_read(code):
            if name in g and _guardable(g[name]):
                self._free_values.setdefault(("global", id(g), name), _global_reader(g, name))
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                value = cell.cell_contents
            except ValueError:          # an empty cell
                continue
            if _guardable(value):
                self._free_values.setdefault(("cell", id(cell), name), _cell_reader(cell))

    # ---- compiling ------------------------------------------------------------------------------
    def _wants_dynamic(self, shapeless, args, kwargs):
        """dynamic=True; or dynamic=None (PyTorch's automatic dynamic shapes) once a call
        differs from a compiled one in sizes only; or a tensor marked with mark_dynamic."""
        if self.dynamic is False:
            return False
        if self.dynamic is True:
            return True
        import sys
        dyn = sys.modules.get("torchlite._dynamo")
        if dyn is not None and any(dyn.marked_dynamic(a) for a in list(args) + list(kwargs.values())
                                   if isinstance(a, Tensor)):
            return True
        return config.automatic_dynamic_shapes and shapeless in self._static_shapeless

    def _compile(self, key, args, kwargs):
        if len(self.cache) + len(self.dynamic_cache) >= config.cache_size_limit:
            if not self._warned_limit:
                warnings.warn(f"torchlite.compile: {self.__name__} hit config.cache_size_limit "
                              f"({config.cache_size_limit}) recompilations; new input "
                              f"signatures run eagerly.  Last one: {_describe_key(key)}")
                self._warned_limit = True
            return _Eager(self, "cache_size_limit reached")
        _record_event("compile", self)
        root = self.module if self.module is not None else self.target
        if self.module is None and not (inspect.isfunction(root) or inspect.ismethod(root)):
            entry = self.cache[key] = _Eager(self, f"{self.__name__} is not a Python function")
            return entry
        shapeless = self._key(args, kwargs, sizes=False)
        dynamic = self._wants_dynamic(shapeless, args, kwargs)
        self._learn_code(root)
        world = self._world()           # before the capture, which may change what it reads
        try:
            with _capturing():
                graph, tracer, layout = _capture.capture(root, args, kwargs, dynamic)
            self._learn_modules(tracer)             # (a capture leaves modules' state alone)
            world = (self._world()[0], world[1])    # the keys with what the capture found
            key, shapeless = key[:-1] + (world,), shapeless[:-1] + (world,)
            if dynamic and not tracer.specialized:
                why = self._sizes_baked_in(root, graph, shapeless)
                if why:
                    tracer.specialized.append(why)
            if dynamic and tracer.specialized:
                _log.recompile(self.__name__, "the graph depends on the sizes: "
                               + tracer.specialized[0])
                dynamic = False
        except _capture.GraphBreak as e:
            if self.fullgraph:
                from .._dynamo.exc import Unsupported
                raise Unsupported(f"torchlite.compile(fullgraph=True): graph break: {e}") from None
            _record_event("break", (self.__name__, str(e)))
            _log.graph_break(self.__name__, e)
            entry = _Eager(self, str(e))
            self.cache[key] = entry
            if isinstance(e, _capture.Escaped):     # the capture's run was this call
                return _Done(e.outputs)
            return entry
        except Exception as e:
            # code the capture cannot run (an op mixing a traced value with something it does
            # not take): run it eagerly, where a real error in the user's code shows as it is
            if self.fullgraph:
                from .._dynamo.exc import Unsupported
                raise Unsupported(f"torchlite.compile(fullgraph=True): the capture failed: "
                                  f"{type(e).__name__}: {e}") from e
            _record_event("break", (self.__name__, f"{type(e).__name__}: {e}"))
            _log.graph_break(self.__name__, e)
            entry = self.cache[key] = _Eager(self, f"the capture failed: {type(e).__name__}: {e}")
            return entry
        try:
            entry = self._build(graph, layout, args, kwargs, dynamic)
        except Exception as e:
            if not config.suppress_errors:
                raise
            return self._suppressed(key, e)
        if dynamic:
            self.dynamic_cache[shapeless] = entry
        else:
            self.cache[key] = entry
            self._static_shapeless.add(shapeless)
            self._static_examples.setdefault(shapeless, _example_of(args, kwargs))
        return entry

    def _sizes_baked_in(self, root, graph, shapeless):
        """A size the code read as a number in a way the capture cannot see (C code taking
        the size's value, `1.0 / n`) is a constant of the symbolic graph: captured again on
        stand-ins of the sizes of an earlier static entry, such a constant differs.  Returns
        why the graph must stay static, or None."""
        example = self._static_examples.get(shapeless)
        if example is None:
            return None
        args, kwargs = _stand_ins(example)
        try:
            with _capturing():
                other, _, _ = _capture.capture(root, args, kwargs, True)
        except Exception as e:
            return f"a capture at another size differs ({type(e).__name__})"
        return None if _same_graph(graph, other) else "a constant computed from a size"

    def _suppressed(self, key, e):
        """config.suppress_errors: the error becomes a warning and the key runs eagerly."""
        warnings.warn(f"torchlite.compile: compiling {self.__name__} failed "
                      f"({type(e).__name__}: {e}); running eagerly (config.suppress_errors)")
        entry = self.cache[key] = _Eager(self, f"{type(e).__name__}: {e}")
        return entry

    def _build(self, graph, layout, args, kwargs, dynamic=False):
        _passes.dead_code(graph)
        _passes.inline_constants(graph)
        kernels = []
        if self.backend == "inductor":
            _passes.fold_constants(graph)
            if self.options.get("fusion", True):
                _passes.inline_decompositions(graph)
                if not dynamic:         # a row length or a mask's size fixed in the graph
                    _passes.decompose_moments(graph)
                    _passes.split_dropout(graph)
            _passes.common_subexpressions(graph)
            _passes.dead_code(graph)
            if self.options.get("fusion", True):
                kernels = _fusion.fuse(graph, dynamic=dynamic)
        root = self.module if self.module is not None else None
        if callable(self.backend) and not isinstance(self.backend, str):
            fn = self._custom_backend(graph, args, kwargs)
        else:
            code = graph.python_code("self")
            scope = dict(code.globals)
            exec(compile(code.src, f"<compiled {self.__name__}>", "exec"), scope)
            fn = scope["forward"]
            _log.graph_code(self.__name__, code.src, kernels)
        return _Graph(fn, root, layout, graph, kernels)

    def _custom_backend(self, graph, args, kwargs):
        """PyTorch's backend protocol: backend(GraphModule, example_inputs) -> a callable."""
        from ..fx.graph_module import GraphModule
        from ..nn.modules.module import Module
        gm = GraphModule(self.module if self.module is not None else Module(), graph)
        example = [a for a in args]
        compiled = self.backend(gm, example)

        def run(_root, *a, **k):
            return compiled(*a, **k)
        return run

    # ---- graph breaks -----------------------------------------------------------------------------
    def _run_split(self, args, kwargs):
        """Run a module's own code eagerly, each of its direct submodules compiled on its own
        (a break in a function runs the whole function eagerly).  The submodules are reached
        through their _compiled_call_impl, set once to a router that sends this thread's calls
        made under this split to the child's Compiled, and every other call to the layer's
        plain call: no global patching, so other threads are not affected."""
        if self.module is None:
            return self._eager(args, kwargs)
        for name, child in self.module.named_children():
            if id(child) not in self._child_compiled and child._compiled_call_impl is None:
                compiled = Compiled(child, fullgraph=False, dynamic=self.dynamic, mode=self.mode,
                                    backend=self.backend, options=self.options)
                self._child_compiled[id(child)] = compiled
                child._compiled_call_impl = _SplitRouter(self, child, compiled)
        prev = getattr(_local, "splitting", None)
        _local.splitting = self
        try:
            return self._eager(args, kwargs)
        finally:
            _local.splitting = prev

    def reset(self) -> None:
        self.cache.clear()
        self.dynamic_cache.clear()
        self._static_shapeless.clear()
        self._static_examples.clear()
        for c in self._child_compiled.values():
            c.reset()
        self._warned_limit = False


class _SplitRouter:
    """A submodule's _compiled_call_impl while a parent with a graph break may call it: the
    parent's split (this thread) gets the child's Compiled, any other call the plain call."""

    def __init__(self, owner, child, compiled):
        self.owner, self.child, self.compiled = weakref.ref(owner), child, compiled

    def __call__(self, *args, **kwargs):
        owner = self.owner()
        if owner is None or getattr(_local, "splitting", None) is not owner:
            return self.child._call_impl(*args, **kwargs)
        _local.splitting = None       # the child compiles and runs as a unit of its own
        try:
            return self.compiled(*args, **kwargs)
        finally:
            _local.splitting = owner

    def __reduce__(self):           # a pickled module does not keep the router
        return (type(None), ())


def _bound_module(fn):
    """The module of a bound Module._call_impl or forward (model.compile() compiles those)."""
    from ..nn.modules.module import Module
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, Module) and getattr(fn, "__name__", "") in ("_call_impl", "forward"):
        return owner
    return None


def _guard(a, sizes=True):
    """What a guard compares of an argument: a tensor's metadata; a constant's type and value
    (2 and 2.0 are different keys); TypeError for what cannot be a guard (a tensor inside a
    container, which the key would also keep alive)."""
    if isinstance(a, Tensor):
        d = a._data
        return ("T", d.shape if sizes else len(d.shape), d.dtype,
                d.device if isinstance(d.device, str) else str(d.device), a._requires_grad)
    if isinstance(a, (tuple, list)):
        return (type(a).__name__,) + tuple(_guard(e, sizes) for e in a if not isinstance(e, Tensor)
                                           or _no_tensor())
    if isinstance(a, float):
        return ("f", repr(a))
    if a is None or isinstance(a, (bool, int, str)):
        return (type(a).__name__, a)
    raise TypeError(f"no guard for an argument of type {type(a).__name__}")


def _no_tensor():
    raise TypeError("a tensor inside a container argument")


def _example_of(args, kwargs):
    """The arguments with each tensor replaced by its (shape, dtype, device, requires_grad)."""
    def one(a):
        if isinstance(a, Tensor):
            return _TensorSpec((tuple(a.shape), a.dtype, a.device, a.requires_grad))
        return a
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


class _TensorSpec(tuple):
    pass


def _stand_ins(example):
    """Arguments of an example's shapes: zeros (ones for integer tensors, which may be sizes
    or divisors)."""
    from .._ops.creation import ones, zeros
    args, kwargs = example

    def one(a):
        if isinstance(a, _TensorSpec):
            shape, dtype, device, requires_grad = a
            t = (zeros if dtype.is_floating_point or dtype.is_complex else ones)(
                shape, dtype=dtype, device=device)
            return t.requires_grad_() if requires_grad else t
        return a
    return tuple(one(a) for a in args), {k: one(v) for k, v in kwargs.items()}


def _same_graph(a, b):
    """Whether two captures of one function are the same program: the same nodes in order
    with the same constants (nodes matched by position)."""
    from ..fx.node import Node, map_aggregate
    na, nb = list(a.nodes), list(b.nodes)
    if len(na) != len(nb):
        return False
    index = {}
    for i, (x, y) in enumerate(zip(na, nb)):
        if x.op != y.op or x.target != y.target:
            return False
        index[x], index[y] = i, i
        flat = []
        for n in (x, y):
            items = []
            map_aggregate((n.args, n.kwargs), lambda v, items=items: items.append(
                ("node", index.get(v)) if isinstance(v, Node) else
                ("tensor", id(v)) if isinstance(v, Tensor) else v))
            flat.append(items)
        try:
            if flat[0] != flat[1]:
                return False
        except Exception:           # constants that do not compare
            return False
    return True


def _plain_attributes(m):
    """A module's own attributes a graph may have baked in: tensors (not parameters or
    buffers: computations on them are not recorded) by identity and version, and numbers,
    strings and None by value (nn.Module's own bookkeeping left out)."""
    global _MODULE_INTERNALS
    if _MODULE_INTERNALS is None:
        from ..nn.modules.module import Module
        _MODULE_INTERNALS = frozenset(Module().__dict__)
    out = []
    for k, v in m.__dict__.items():
        if k in _MODULE_INTERNALS:
            continue
        t = type(v)
        if t is float or t is int or t is bool or t is str or v is None:
            out.append((k, v))
        elif isinstance(v, Tensor):
            out.append((k, id(v), v._version))
        elif (t is list or t is tuple or t is dict or _is_record(v)) and _guardable(v):
            out.append((k, _guard_value(v)))
    return tuple(out)


def _is_record(v):
    """A plain record of values: a SimpleNamespace or a dataclass instance (a config)."""
    import dataclasses
    import types
    return isinstance(v, types.SimpleNamespace) or (dataclasses.is_dataclass(v) and not isinstance(v, type))


_MODULE_INTERNALS = None


def _names_read(code):
    """The global names a code object (and the functions and comprehensions inside it) reads."""
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names_read(c)
    return names


def _guardable(v, depth=0):
    """Whether a value read from a global or a closure is guarded (by value, or by identity
    for a tensor): what a graph may have baked in."""
    if v is None or isinstance(v, (bool, int, float, complex, str, Tensor)):
        return True
    if depth == 0 and isinstance(v, (tuple, list)) and len(v) <= 64:
        return all(_guardable(e, 1) for e in v)
    if depth == 0 and type(v) is dict and len(v) <= 64:
        return all(_guardable(e, 1) for e in v.values())
    if depth == 0 and _is_record(v) and len(vars(v)) <= 64:
        return all(_guardable(e, 1) for e in vars(v).values())
    return False


def _guard_value(v):
    if isinstance(v, Tensor):               # (what the code computes from it is baked in)
        return ("tensor", id(v), v._version)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(_guard_value(e) for e in v))
    if type(v) is dict:
        return ("dict", tuple((k, _guard_value(e)) for k, e in v.items()))
    if _is_record(v):
        return (type(v).__name__, tuple((k, _guard_value(e)) for k, e in vars(v).items()))
    if isinstance(v, float) and v != v:
        return ("nan",)
    return (type(v).__name__, v)


def _global_reader(g, name):
    def read():
        return _guard_value(g.get(name, _capture.GraphBreak))
    return read


def _cell_reader(cell):
    def read():
        try:
            return _guard_value(cell.cell_contents)
        except ValueError:
            return None
    return read


def _describe_key(key):
    return ", ".join(f"{k[1]}" for k in key if isinstance(k, tuple) and k and k[0] == "T")


def _autocast_on():
    import sys
    amp = sys.modules.get("torchlite.amp.autocast_mode")
    return amp is not None and amp._state.active


def reset() -> None:
    """Forget every compiled graph (torch.compiler.reset / torch._dynamo.reset)."""
    for c in list(_all_compiled):
        c.reset()


# ---- explain's recorder ------------------------------------------------------------------------
def _record_event(kind, what):
    rec = getattr(_local, "recorder", None)
    if rec is not None:
        rec.append((kind, what))


@contextlib.contextmanager
def recording():
    """Collect ('compile' | 'graph' | 'break', detail) events of the calls in the block."""
    prev = getattr(_local, "recorder", None)
    events = []
    _local.recorder = events
    try:
        yield events
    finally:
        _local.recorder = prev
