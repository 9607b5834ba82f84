"""What a compiled callable does on each call: check the guards, find (or build) the compiled
graph for them, run it; or run eagerly where the code cannot be captured.

Guards.  A compiled graph is specialised on what its capture fixed: each tensor argument's
shape, dtype, device and requires_grad, the other arguments' values, grad mode, the default
dtype, every submodule's training flag and attributes, and what the code it ran read
outside its arguments (globals, closure cells, default values, class attributes, the
user's Python modules' attributes: see _world and _learn_reachable).  The key of those is looked up in a per-callable
cache; a miss compiles again, up to config.cache_size_limit entries, after which new keys run
eagerly with a warning (PyTorch's recompile limit).

Graph breaks.  When the capture meets a construct it cannot record (_capture.GraphBreak),
fullgraph=True raises torchlite._dynamo.exc.Unsupported naming it and its line.  Otherwise
the call runs around the break: the function is split at the breaking statement
(compiler/_split.py; _Split: the statements before it and after it compiled, the statement
itself eagerly), or, where it cannot be split, its own code runs eagerly and each submodule
it calls is compiled on its own (recursively, so the break shrinks to the smallest module
that holds it).  explain() reports the graphs and the breaks."""
from __future__ import annotations

import contextlib
import functools
import inspect
import keyword
import os
import sys
import sysconfig
import threading
import types
import warnings
import weakref

from .._tensor import Tensor
from ..autograd.grad_mode import _state as _grad_state
from . import _capture, _epilogue, _fusion, _passes, _log
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


class _Split:
    """A cache entry for code split at a graph break (compiler/_split.py): the statements
    before the breaking one compiled, the breaking statement run eagerly (a module's
    submodules called there compiled on their own), the statements after it compiled (and
    split again at their own break)."""

    def __init__(self, owner, pre, mid, post, reason):
        self.owner, self.pre, self.mid, self.post, self.reason = owner, pre, mid, post, reason

    def __call__(self, args, kwargs):
        live = self.pre(*args, **kwargs)
        with self.owner._children_compiled():
            returned, values = self.mid(*live)
        if returned:
            return values
        return self.post(*values)


class _Done:
    """The result of a call the capture itself ran (see _capture.Escaped); not cached."""

    def __init__(self, outputs):
        self.outputs = outputs

    def __call__(self, args, kwargs):
        return self.outputs


class _Graph:
    """A cache entry: the compiled function of one captured graph."""

    def __init__(self, fn, root, layout, graph, kernels, sizes=None):
        self.fn, self.root, self.layout = fn, root, layout
        self.graph, self.kernels = graph, kernels
        self.sizes = sizes          # where the output holds a torchlite.Size (the graph's
                                    # code rebuilds it as a plain tuple)

    def __call__(self, args, kwargs):
        _record_event("graph", self)
        if self.layout[0] == "args":
            out = self.fn(self.root, *args)
        else:
            out = self.fn(self.root, *_capture.bind_call(self.layout[1], args, kwargs))
        return out if self.sizes is None else _capture.with_sizes(out, self.sizes)


_warned_no_cc = []          # cpp_codegen's missing-compiler warning, given once


class Compiled:
    """A compiled module or function (what torchlite.compile returns for a function, and what
    OptimizedModule and Module.compile call)."""

    def __init__(self, target: Module | Callable[..., Any], *, fullgraph: bool = False,
                 dynamic: bool | None = None, mode: str | None = None, backend: str | Callable[..., Any] = "inductor",
                 options: dict[str, Any] | None = None) -> None:
        from ..nn.modules.module import Module
        self.target = target
        self.module = target if isinstance(target, Module) else _bound_module(target)
        owner = getattr(target, "__self__", None)
        self.fullgraph, self.dynamic, self.mode = fullgraph, dynamic, mode
        self.backend = backend
        self.options = dict(options or {})
        self.cache = {}                 # guards (sizes included) -> entry
        self.dynamic_cache = {}         # guards without sizes -> entry of a dynamic capture
        self._static_shapeless = set()  # the size-free keys of the static entries
        self._static_examples = {}      # size-free key -> the arguments' shapes of a static entry
        self._warned_limit = False
        self._child_compiled = {}       # id(submodule) -> Compiled, for graph breaks
        self.hands_over = False         # the first piece of a split: what it returns goes on
                                        # to the breaking statement (see _split_at)
        # what the captures found the code reading outside its arguments, guarded on every
        # call (see _world): modules outside the root, and the globals, closure cells,
        # default values and class attributes its code (and the code it calls) reads
        self._foreign_modules = {}      # id -> module
        self._free_values = {}          # (kind, id of the dict, cell or owner, name) -> reader
        self._attr_names = set()        # the attribute names that code reads
        self._learned_functions = {}    # id -> function whose state is guarded (kept, so
                                        # that its id is not another function's)
        self._tree_key = None           # (module epoch, key, modules) of _world's module trees
        if self.module is None and isinstance(owner, Module):
            # a module's method other than forward (model.loss): its module's tree is read
            # as a foreign module's, guarded on every call
            self._foreign_modules[id(owner)] = owner
        _all_compiled.add(self)
        self.__name__ = getattr(target, "__name__", type(target).__name__)
        self.__doc__ = getattr(target, "__doc__", None)
        self.__wrapped__ = target

    def __getstate__(self) -> dict[str, Any]:
        """Copied or pickled without its compiled graphs (kernels and guard readers are this
        process's): the copy compiles again on its first call."""
        state = self.__dict__.copy()
        for name in ("cache", "dynamic_cache", "_child_compiled", "_static_examples",
                     "_foreign_modules", "_free_values", "_learned_functions"):
            state[name] = {}
        for name in ("_static_shapeless", "_attr_names"):
            state[name] = set()
        state["_tree_key"] = None
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
        buffer and tensor attribute, so a replaced or removed one is too, its other
        attributes as _guard_value keys them; hooks, which the graph would skip, make the call
        eager), and what the code read elsewhere: globals, closure cells, functions' default
        values and class attributes (see _guard_value)."""
        from ..nn.modules import module as _module
        epoch = _module._epoch[0]
        cached = self._tree_key
        walk = cached is None or cached[0] != epoch or cached[3] != len(self._foreign_modules)
        if not walk:
            # no module anywhere changed an attribute, parameter, buffer or child since the
            # trees were walked (and none of theirs is a value that changes in place): the
            # walk's key stands; hooks are registered without such a change, so they are
            # looked for again, and so is each module's class (`m.__class__ = Other` moves
            # no epoch; the walk keys it)
            mods_key, modules = cached[1], cached[2]
            for m, cls in zip(modules, cached[4]):
                if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks \
                        or m._backward_pre_hooks:
                    raise TypeError("a module with hooks")
                if type(m) is not cls:
                    walk = True
                    break
        if walk:
            mods_key, modules, stable = self._walk_trees()
            self._tree_key = (epoch, mods_key, modules, len(self._foreign_modules),
                              tuple(map(type, modules))) if stable else None
        free = tuple(read() for read in self._free_values.values())
        return mods_key, free

    def _walk_trees(self):
        """(key, modules, stable) of the module trees _world guards: the key, every module
        in them, and whether the key can only change through a module's own change (no
        plain attribute is a tensor, a container or a record compared by value, and every
        module's parameter, buffer and child dicts count their changes)."""
        from ..nn.modules.module import _TrackedDict
        trees = [self.module] if self.module is not None else []
        trees += self._foreign_modules.values()
        mods, modules, stable = [], [], True
        for tree in trees:
            for m in tree.modules():
                if m._forward_pre_hooks or m._forward_hooks or m._backward_hooks \
                        or m._backward_pre_hooks:
                    raise TypeError("a module with hooks")
                plain = _plain_attributes(m)
                mods.append((id(m), type(m), m.training, tuple(map(id, m._parameters.values())),
                             tuple(map(id, m._buffers.values())), plain))
                modules.append(m)
                stable = stable and type(m._parameters) is _TrackedDict \
                    and type(m._buffers) is _TrackedDict and type(m._modules) is _TrackedDict \
                    and not any(_changes_in_place(k[-1]) for k in plain)
        return _HashedKey(tuple(mods)), tuple(modules), stable

    def _learn_modules(self, tracer):
        """After a capture: the modules outside the root it found the code using."""
        for m in tracer.foreign_modules.values():
            if m is not self.module:
                self._foreign_modules.setdefault(id(m), m)

    def _learn_code(self, root):
        """Before a capture: the globals, closure cells and default values the compiled code
        may read (a capture may change them, so they are read first)."""
        fn = type(root).forward if self.module is not None and root is self.module else root
        self._learn_function(getattr(fn, "__func__", fn))
        owner = self._plain_owner()
        if owner is not None:
            # a method of a plain object reads its attributes as a module's forward reads the
            # module's: guarded by value (a split method's breaking statement, run eagerly,
            # may change one that the graph after it read: `self.steps += 1`)
            self._guard_read(("self", id(owner), ""), _AttributesReader(owner))

    def _plain_owner(self):
        """The object a compiled method other than a module's is bound to, or None."""
        from ..nn.modules.module import Module
        owner = getattr(self.target, "__self__", None)
        if self.module is not None or owner is None or isinstance(owner, (Module, types.ModuleType)):
            return None
        return owner

    def _learn_function(self, fn):
        """Guard what a Python function reads besides its arguments: the globals its code
        names, its closure cells, its default values (a graph bakes in a default it was
        captured with)."""
        code = getattr(fn, "__code__", None)
        if code is None or id(fn) in self._learned_functions:
            return
        self._learned_functions[id(fn)] = fn
        self._learn_names(code, getattr(fn, "__globals__", {}))
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            self._guard_read(("cell", id(cell), name), _CellReader(cell))
        if getattr(fn, "__defaults__", None) or getattr(fn, "__kwdefaults__", None):
            self._guard_read(("defaults", id(fn), ""), _defaults_reader(fn))

    def _learn_names(self, code, g):
        """The globals a code object names (all of them: numbers and containers by value,
        anything else by identity, so a rebound function, class or model is seen), and the
        attribute names it reads, for the class attributes _learn_reachable guards."""
        names = _names_read(code)
        self._attr_names |= names | _identifier_constants(code)     # (getattr(self, "scale"))
        for name in names:
            if name in g:
                self._guard_read(("global", id(g), name), _GlobalReader(g, name))

    def _learn_ran(self, ran):
        """After a capture: the code it ran (ran: code object -> its globals), which reads
        globals the compiled function's own code does not name (a helper's, a submodule's
        forward's, a property's), and what _learn_reachable finds from there."""
        for code, g in ran.items():
            if g is not None:
                self._learn_names(code, g)
        self._learn_reachable(ran)

    def _learn_reachable(self, ran):
        """What the code reaches through the objects it reads (the module trees' classes
        and attributes, the globals' and closure cells' values):
        - the functions among them whose code the capture ran (ran): their closure cells
          and defaults (a helper made by a factory, held in a global or a closure);
        - class attributes (self.scale defined on the class, an inherited one,
          type(self).FLAG, Config.FLAG, a config object's class's): of each class found
          and each plain object's class, each name the code reads that the class (or a
          base outside torchlite) defines;
        - attributes of the user's own Python modules (`import config; config.SCALE`).
        Guarded as globals are (_guard_value: a method by identity), and looked up anew on
        each call, so a change made on a base class is seen too."""
        trees = ([self.module] if self.module is not None else []) + list(self._foreign_modules.values())
        internals = _module_internals()
        found = []
        for tree in trees:
            for m in tree.modules():
                found.append(type(m))
                found.extend(v for k, v in m.__dict__.items() if k not in internals)
        found.extend(_read_values(self._free_values.values()))
        if self._plain_owner() is not None:     # (its class's attributes, or a classmethod's)
            found.append(self._plain_owner())
        names = [n for n in self._attr_names if not (n.startswith("__") and n.endswith("__"))]
        seen = set()
        while found:
            v = found.pop()
            fn = getattr(v, "__func__", v)          # (a bound method)
            if isinstance(fn, types.FunctionType):
                # (torchlite's own functions, reached as a global of the user's code or of a
                # library model: their globals are the library's, not state of the user's)
                if fn.__code__ in ran and id(fn) not in self._learned_functions \
                        and _users_file(fn.__module__, fn.__code__.co_filename):
                    count = len(self._free_values)
                    self._learn_function(fn)
                    found.extend(_read_values(list(self._free_values.values())[count:]))
                continue
            if isinstance(v, types.ModuleType):
                if id(v) in seen or not _users_module(v):
                    continue
                seen.add(id(v))
                g = vars(v)
                for name in names:
                    if name in g:
                        self._guard_read(("global", id(g), name), _GlobalReader(g, name))
                        found.append(g[name])       # (config.Model.SCALE, pkg.sub.X)
                continue
            cls = v if isinstance(v, type) else type(v) if _is_record(v) else None
            if cls is None or id(cls) in seen:
                continue
            seen.add(id(cls))
            own = [k.__dict__ for k in cls.__mro__ if not _library_class(k)]
            for name in names:
                if any(name in d for d in own):
                    self._guard_read(("class", id(cls), name), _class_reader(cls, name))

    def _guard_read(self, key, reader):
        self._free_values.setdefault(key, reader)

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
        known = len(self._free_values)
        world = self._world()           # before the capture, which may change what it reads
        ran = {}
        try:
            try:
                with _capturing(), _code_run(ran):
                    graph, tracer, layout = _capture.capture(root, args, kwargs, dynamic)
                self._learn_modules(tracer)         # (a capture leaves modules' state alone)
            finally:
                # the keys with what the capture found: the module trees as they are (a
                # capture leaves them alone), the values read before it as they were then,
                # and what it newly found the code reading
                self._learn_ran(ran)
                after = self._world()
                world = (after[0], world[1] + after[1][known:])
                key, shapeless = key[:-1] + (world,), shapeless[:-1] + (world,)
            shared = _capture.shared_output(tracer.output_values) if self.hands_over else None
            tracer.output_values = None     # (the tracer is in reference cycles: the capture's
                                            # results would wait for the cyclic collector)
            if shared is not None:
                # an object the graph would return as one constant while the code makes a new
                # one per call (the breaking statement may change it): this piece runs eagerly
                _log.graph_break(self.__name__, shared)
                entry = self.cache[key] = _Eager(self, shared)
                return entry
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
            split = None if isinstance(e, _capture.Escaped) else self._split_at(root, e)
            if split is not None:
                self.cache[key] = split
                return split
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
            entry.sizes = tracer.output_sizes
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
                kernels = _fusion.fuse(graph, dynamic=dynamic, native=self._cpp_codegen())
                if self.options.get("epilogue_fusion", False) and not dynamic:
                    _epilogue.fuse_epilogues(graph)
        root = self.module if self.module is not None else None
        if callable(self.backend) and not isinstance(self.backend, str):
            fn = self._custom_backend(graph, args, kwargs)
        else:
            if root is not None:
                _bind_module_tensors(graph, root)
            code = graph.python_code("self")
            scope = dict(code.globals)
            exec(compile(code.src, f"<compiled {self.__name__}>", "exec"), scope)
            fn = scope["forward"]
            _log.graph_code(self.__name__, code.src, kernels)
        return _Graph(fn, root, layout, graph, kernels)

    def _cpp_codegen(self):
        """Whether fused programs also run as generated C: options={"cpp_codegen": True} or
        TORCHLITE_CPP_CODEGEN=1, where a C compiler is found (warned once when not)."""
        on = self.options.get("cpp_codegen", os.environ.get("TORCHLITE_CPP_CODEGEN", "") == "1")
        if on:
            from . import _cpp
            if _cpp.compiler() is None:
                if not _warned_no_cc:
                    _warned_no_cc.append(True)
                    warnings.warn("torchlite.compile: cpp_codegen needs a C compiler ($CC, cc, gcc "
                                  "or clang) and none was found; fused programs run on the "
                                  "interpreter")
                return False
        return bool(on)

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
    def _split_at(self, root, e):
        """The _Split entry of the code around graph break e: the compiled function's body cut
        at the statement running when the break happened (compiler/_split.py), or None when
        it cannot be cut there."""
        from . import _split
        if self.module is not None:
            func, owner = type(self.module).forward, self.module
        elif inspect.ismethod(root):
            func, owner = root.__func__, root.__self__
        else:
            func, owner = root, None
        code, line, tb = getattr(func, "__code__", None), None, e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is code:
                line = tb.tb_lineno
            tb = tb.tb_next
        from ..nn.modules.module import Module
        pieces = _split.plan(func, line, owner is not None, isinstance(owner, Module)) \
            if line is not None else None
        if pieces is None:
            return None

        def bind(f):
            return types.MethodType(f, owner) if owner is not None else f
        opts = dict(fullgraph=False, dynamic=self.dynamic, mode=self.mode, backend=self.backend,
                    options=self.options)
        pre, post = bind(pieces.pre), bind(pieces.post)
        if not pieces.pre_empty:
            pre = Compiled(pre, **opts)
            pre.hands_over = True
        return _Split(self, pre, bind(pieces.mid),
                      post if pieces.post_empty else Compiled(post, **opts), str(e))

    def _run_split(self, args, kwargs):
        """Run a module's own code eagerly, each of its direct submodules compiled on its own
        (a break in a function that cannot be split runs the whole function eagerly)."""
        with self._children_compiled():
            return self._eager(args, kwargs)

    @contextlib.contextmanager
    def _children_compiled(self):
        """While the block runs this module's code eagerly, its direct submodules run
        compiled, each on its own.  They are reached through their _compiled_call_impl, set
        once to a router that sends this thread's calls made under this split to the child's
        Compiled, and every other call to the layer's plain call: no global patching, so
        other threads are not affected.  Nothing to route for a function."""
        if self.module is None:
            yield
            return
        for name, child in self.module.named_children():
            if id(child) not in self._child_compiled and child._compiled_call_impl is None:
                compiled = Compiled(child, fullgraph=False, dynamic=self.dynamic, mode=self.mode,
                                    backend=self.backend, options=self.options)
                self._child_compiled[id(child)] = compiled
                child._compiled_call_impl = _SplitRouter(self, child, compiled)
        prev = getattr(_local, "splitting", None)
        _local.splitting = self
        try:
            yield
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


def _bind_module_tensors(graph, root):
    """Give the graph's reads of root's parameters and buffers (get_attr nodes, which the
    code would run as chains of Module.__getattr__ on every call) the tensors themselves.
    The guards key on every parameter's and buffer's identity, so a replaced one is a new
    key and another graph; one changed in place is the same tensor, read as it is."""
    from ..fx.node import map_aggregate
    owned = {id(t): t for t in root.parameters()}
    owned.update((id(t), t) for t in root.buffers())
    for n in list(graph.nodes):
        if n.op != "get_attr":
            continue
        obj = root
        try:
            for part in n.target.split("."):
                obj = getattr(obj, part)
        except AttributeError:
            continue
        if id(obj) not in owned or owned[id(obj)] is not obj:
            continue
        # (the generated code names it after its path: fc1.weight -> fc1_weight, 0.weight ->
        # _0_weight)
        name = n.target.replace(".", "_")
        if not (name[:1].isalpha() or name[:1] == "_") or keyword.iskeyword(name):
            name = "_" + name
        graph.__dict__.setdefault("constant_names", {})[id(obj)] = name
        for user in list(n.users):
            user.args = map_aggregate(user.args, lambda a: obj if a is n else a)
            user.kwargs = map_aggregate(user.kwargs, lambda a: obj if a is n else a)
        graph.erase_node(n)
        graph._names.pop(n.name, None)         # (its name is free for the tensor's global)


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
    """A module's own attributes a graph may have baked in, keyed by _guard_value: tensors
    (not parameters or buffers: computations on them are not recorded) by identity and
    version, numbers, strings and small containers and records by value, anything else (a
    function such as a layer's activation, an enum member) by identity; nn.Module's own
    bookkeeping left out."""
    internals = _module_internals()
    out = []
    for k, v in m.__dict__.items():
        if k in internals:
            continue
        t = type(v)
        if t is int or t is bool or t is str or v is None:     # (most of them, keyed inline)
            out.append((k, t, v))
        else:
            out.append((k, _guard_value(v)))
    return tuple(out)


def _module_internals():
    global _MODULE_INTERNALS
    if _MODULE_INTERNALS is None:
        from ..nn.modules.module import Module
        _MODULE_INTERNALS = frozenset(Module().__dict__)
    return _MODULE_INTERNALS


def _is_record(v):
    """A plain record of values (a config): a SimpleNamespace, a dataclass instance, or an
    instance of a plain class of the user's (its attributes in its __dict__)."""
    import dataclasses
    import enum
    if isinstance(v, types.SimpleNamespace) or (dataclasses.is_dataclass(v) and not isinstance(v, type)):
        return True
    t = type(v)
    return (t.__module__ not in ("builtins", "functools") and not _library_class(t)
            and isinstance(getattr(v, "__dict__", None), dict) and not callable(v)
            and not isinstance(v, (type, types.ModuleType, enum.Enum, Tensor)))


def _library_class(cls):
    """torchlite's own classes and object: their class attributes are not the user's state."""
    return cls is object or (cls.__module__ or "").split(".")[0] == "torchlite"


_MODULE_INTERNALS = None


def _identifier_constants(code):
    """The strings a code object (and those inside it) holds that may name an attribute."""
    found = {c for c in code.co_consts if type(c) is str and c.isidentifier()}
    for c in code.co_consts:
        if hasattr(c, "co_consts"):
            found |= _identifier_constants(c)
    return found


def _names_read(code):
    """The global names a code object (and the functions and comprehensions inside it) reads."""
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            names |= _names_read(c)
    return names


_GUARDED_LENGTH = 64        # longer containers and records are guarded by identity
_GUARDED_DEPTH = 2          # and so are those nested deeper


def _guard_value(v, depth=0):
    """What a guard compares of a value the code reads outside its arguments (a global, a
    closure cell, a default, a class or module attribute): numbers, strings and None by
    value; a tensor by identity and version (what the code computed from it is baked in);
    tuples, lists, dicts and records (a SimpleNamespace, a dataclass, a plain config
    object) by their elements' keys, up to a size and depth; a functools.partial by its
    function and arguments; anything else -- a function, a class, a module, an enum
    member, a larger container -- by identity."""
    t = type(v)
    if v is None or t is bool or t is int or t is str or t is complex:
        return (t.__name__, v)
    if t is float:
        return ("nan",) if v != v else ("f", v)
    if isinstance(v, Tensor):
        return ("tensor", id(v), v._version)
    if depth < _GUARDED_DEPTH:
        if (t is tuple or t is list) and len(v) <= _GUARDED_LENGTH:
            return (t.__name__, tuple(_guard_value(e, depth + 1) for e in v))
        if t is dict and len(v) <= _GUARDED_LENGTH:
            return ("dict", tuple((k, _guard_value(e, depth + 1)) for k, e in v.items()))
        if t is functools.partial:
            return ("partial", _Identity(v.func), _guard_value(v.args, depth + 1),
                    _guard_value(v.keywords, depth + 1))
        if _is_record(v) and len(vars(v)) <= _GUARDED_LENGTH:
            return (_Identity(t), tuple((k, _guard_value(e, depth + 1)) for k, e in vars(v).items()))
    return _Identity(v)


class _HashedKey:
    """A large guard key (the module trees') with its hash computed once: a call reusing
    the same key object hashes and compares it at no cost."""

    __slots__ = ("key", "h")

    def __init__(self, key):
        self.key, self.h = key, hash(key)

    def __hash__(self):
        return self.h

    def __eq__(self, other):
        return self is other or (type(other) is _HashedKey and self.h == other.h
                                 and self.key == other.key)


def _changes_in_place(key):
    """Whether a _guard_value key can change while the value stays the same object: a
    tensor's (its version) and a container's or record's compared by value."""
    if type(key) is not tuple or not key:
        return False
    head = key[0]
    if head == "tensor" or head in ("list", "dict", "partial") or isinstance(head, _Identity):
        return True
    if head == "tuple":
        return any(_changes_in_place(e) for e in key[1])
    return False


class _Identity:
    """A guard on an object's identity.  It holds the object, so that a cached key keeps it
    alive and its id cannot be reused by another object that would then pass the guard."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return type(other) is _Identity and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


_MISSING = object()             # a global or class attribute that is not there (deleted)


class _GlobalReader:
    """Reads a global for the guards (by _guard_value); value() is the global itself."""

    __slots__ = ("g", "name")

    def __init__(self, g, name):
        self.g, self.name = g, name

    def value(self):
        return self.g.get(self.name, _MISSING)

    def __call__(self):
        return _guard_value(self.g.get(self.name, _MISSING))


class _CellReader:
    """Reads a closure cell for the guards; value() is its content."""

    __slots__ = ("cell",)

    def __init__(self, cell):
        self.cell = cell

    def value(self):
        try:
            return self.cell.cell_contents
        except ValueError:          # an empty cell
            return _MISSING

    def __call__(self):
        return _guard_value(self.value())


class _AttributesReader:
    """Reads an object's own attributes for the guards (each by _guard_value)."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __call__(self):
        attrs = getattr(self.obj, "__dict__", None)
        if not isinstance(attrs, dict):
            return None
        return tuple((k, _guard_value(v)) for k, v in attrs.items())


def _read_values(readers):
    """The values behind the global and cell readers among readers."""
    return [r.value() for r in readers if isinstance(r, (_GlobalReader, _CellReader))]


def _defaults_reader(fn):
    def read():
        return _guard_value(fn.__defaults__), _guard_value(fn.__kwdefaults__)
    return read


def _class_reader(cls, name):
    """A class attribute as an attribute read finds it: in the first class of the MRO (as
    it is now: a base's value may be shadowed later) that defines it."""
    def read():
        for k in cls.__mro__:
            d = k.__dict__
            if name in d:
                return _guard_value(d[name])
        return _Identity(_MISSING)
    return read


@contextlib.contextmanager
def _code_run(ran):
    """Collect into ran (code object -> its globals, or None for torchlite's own and the
    standard library's code) the Python code that runs in the block on this thread: the
    code the capture ran, whose globals and attribute reads the guards learn.  A trace
    function in place (a debugger, coverage) keeps working: each call is handed on to it."""
    previous = sys.gettrace()

    def trace(frame, event, arg):
        code = frame.f_code
        if code not in ran:
            ran[code] = frame.f_globals if _users_code(frame) else None
        return previous(frame, event, arg) if previous is not None else None
    sys.settrace(trace)
    try:
        yield ran
    finally:
        sys.settrace(previous)


def _users_code(frame):
    """Whether the code of a frame is the user's (not torchlite's or the standard library's,
    whose globals and attributes are not the user's state)."""
    return _users_file(frame.f_globals.get("__name__"), frame.f_code.co_filename)


def _users_module(module):
    return _users_file(module.__name__, getattr(module, "__file__", None))


def _users_file(module_name, filename):
    if module_name == "torchlite" or (module_name or "").startswith("torchlite."):
        return False
    return filename is not None and not filename.startswith(_STDLIB) and not filename.startswith("<frozen")


_STDLIB = tuple({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


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
