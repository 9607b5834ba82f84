"""Symbolic tracing: run a module's forward on Proxies and record what it does as a Graph
(PyTorch's torch.fx.symbolic_trace and Tracer).

While a trace runs, three doors are opened and closed again afterwards:
- nn.Module.__call__ goes through Tracer.call_module: a leaf module (torchlite.nn's own
  layers, by default) becomes one call_module node, any other runs its forward on the proxies;
- attribute reads of parameters and buffers inside a forward give get_attr proxies;
- torchlite's public functions (torchlite.*, torchlite.nn.functional.*, torchlite.linalg.*,
  torchlite.special.*) and the functions named by `wrap` record a call_function node when a
  Proxy is among their arguments, and compute as usual otherwise.
This is the same patch-for-the-duration approach as autocast's today (issue 16 step 6 moves
both to one op-entry hook)."""
import builtins
import functools
import inspect
import sys
import threading

from .graph import Graph
from .node import map_aggregate
from .proxy import Proxy, SymInt, TraceError

__all__ = ["Tracer", "symbolic_trace", "wrap", "TraceError"]

_PATCHED_NAMESPACES = ("torchlite", "torchlite.nn.functional", "torchlite.linalg",
                       "torchlite.special")
# static methods of torchlite.nn classes that models call with sizes taken from their inputs
# (the causal mask of a sequence's length): recorded whole, as wrap()ped functions are
_AUTOWRAP_STATIC = (("torchlite.nn", "Transformer", "generate_square_subsequent_mask"),)
_wrapped_globals = []           # (module globals dict, name) registered by wrap()
# private names of the namespaces that record as their public functions do (torch._assert,
# which code written for torch.fx calls to check sizes)
_PRIVATE_RECORDED = frozenset({"_assert"})
_patch_lock = threading.RLock()
_proxy_wrappers = {}            # original function -> its proxy-aware wrapper


def wrap(fn_or_name):
    """Called at module scope: calls of this module-level function are recorded as
    call_function nodes when traced (the function is not traced into).  Takes the function
    or its name, as PyTorch's torch.fx.wrap, or decorates the function (@fx.wrap)."""
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    # as a decorator (@fx.wrap over a def) the name is bound only after wrap returns: it is
    # not a global yet, or still an earlier function of that name
    current = caller.f_globals.get(name)
    if not isinstance(fn_or_name, str) and current is not fn_or_name and current is not None \
            and getattr(current, "__name__", None) != name:
        raise ValueError(f"wrap: {name} is not a global of the calling module")
    _wrapped_globals.append((caller.f_globals, name))
    return fn_or_name


def _find_proxy(args, kwargs):
    found = []

    def look(x):
        if isinstance(x, (Proxy, SymInt)) and not found:
            found.append(x)
        return x
    map_aggregate((args, kwargs), look)
    return found[0] if found else None


def _proxy_aware(fn):
    """fn, recording itself as a call_function node when given a Proxy."""
    w = _proxy_wrappers.get(fn)
    if w is None:
        @functools.wraps(fn)
        def w(*args, **kwargs):
            p = _find_proxy(args, kwargs)
            if p is not None:
                return p.tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        w._fx_original = fn
        _proxy_wrappers[fn] = w
    return w


def _is_function(v):
    return callable(v) and not isinstance(v, type) and type(v).__name__ in (
        "function", "builtin_function_or_method", "cython_function_or_method")


class _Patcher:
    """Sets attributes for the duration of a trace and puts them all back after."""

    def __init__(self):
        self._undo = []

    def set(self, obj, name, value, is_dict=False):
        if is_dict:
            self._undo.append((obj, name, obj.get(name, _MISSING), True))
            obj[name] = value
        else:
            self._undo.append((obj, name, obj.__dict__.get(name, _MISSING), False))
            setattr(obj, name, value)

    def set_cell(self, cell, value):
        self._undo.append((cell, "cell_contents", cell.cell_contents, None))
        cell.cell_contents = value

    def undo(self):
        for obj, name, old, is_dict in reversed(self._undo):
            if is_dict is None:             # a closure cell
                obj.cell_contents = old
            elif is_dict:
                if old is _MISSING:
                    obj.pop(name, None)
                else:
                    obj[name] = old
            elif old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)
        self._undo.clear()


_MISSING = object()


class Tracer:
    """Records a module's forward as a Graph.  Override is_leaf_module to choose which
    submodules stay whole (call_module) and which are traced through."""

    # the modules whose public functions record call_function nodes
    patched_namespaces = _PATCHED_NAMESPACES

    def __init__(self, autowrap_modules=(), autowrap_functions=(), param_shapes_constant=False):
        self.autowrap_functions = tuple(autowrap_functions)
        self.root = None
        self.graph = None
        self.tensor_attrs = {}          # id(tensor) -> its path in the traced module
        self.constants = {}             # path -> a tensor the module does not own
        self._suspended = False         # True while a subclass runs real code mid-trace
        self._thread = None             # the thread tracing (others' calls are not traced)
        self._path_stack = []           # the non-leaf submodules being traced through

    # ---- the policy a subclass changes ----------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """torchlite.nn's own layers (not its containers) stay one call_module node."""
        from ..nn.modules.container import ModuleDict, ModuleList, Sequential
        return (type(m).__module__ or "").startswith("torchlite.nn") and \
            not isinstance(m, (Sequential, ModuleList, ModuleDict))

    # ---- building nodes -----------------------------------------------------------------------
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        # the submodule whose forward made it (error messages name it; "" is the root)
        node.meta["module_path"] = self._path_stack[-1] if self._path_stack else ""
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        return self.proxy(self.create_node(kind, target, args_, kwargs_, name, type_expr))

    def create_arg(self, a):
        """An argument as the graph holds it: proxies become their nodes; parameters,
        buffers and other tensors become get_attr nodes (a tensor the module does not own is
        kept as a constant attribute of the traced module); containers are walked."""
        from .._tensor import Tensor
        from ..nn.modules.module import Module

        def convert(x):
            if isinstance(x, (Proxy, SymInt)):
                return x.node
            if isinstance(x, Tensor):
                return self._tensor_attr(x)
            if isinstance(x, Module):
                raise TraceError(f"a module cannot be an argument of a traced call: "
                                 f"{type(x).__name__}")
            return x
        return map_aggregate(a, convert)

    def _tensor_attr(self, t):
        path = self.tensor_attrs.get(id(t))
        if path is None:
            i = 0
            while hasattr(self.root, f"_tensor_constant{i}"):
                i += 1
            path = f"_tensor_constant{i}"
            while path in self.constants:
                i += 1
                path = f"_tensor_constant{i}"
            self.constants[path] = t        # not the module's: the traced module keeps it
            self.tensor_attrs[id(t)] = path
        return self.graph.get_attr(path)

    def path_of_module(self, mod):
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A submodule's call: one call_module node for a leaf, else its forward traced."""
        path = self.path_of_module(m)
        if self.is_leaf_module(m, path):
            return self.create_proxy("call_module", path, args, kwargs)
        self._patch_class_globals(type(m))
        self._path_stack.append(path)
        try:
            return forward(*args, **kwargs)
        finally:
            self._path_stack.pop()

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter or buffer read inside a traced forward: its get_attr proxy."""
        path = self.tensor_attrs.get(id(attr_val))
        if path is None:
            return attr_val
        p = parameter_proxy_cache.get(path)
        if p is None:
            p = parameter_proxy_cache[path] = self.attr_proxy(self.graph.get_attr(path), attr_val)
        return p

    def attr_proxy(self, node, value):
        """The proxy of a get_attr node (value: the tensor it reads)."""
        return self.proxy(node)

    # ---- the trace -----------------------------------------------------------------------------
    def trace(self, root, concrete_args=None):
        """The Graph of root's forward (a Module) or of root (a function)."""
        from ..nn.modules.module import Module
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            bound_self = [root]
        elif callable(root):
            self.root = Module()
            fn = root
            bound_self = []
        else:
            raise TypeError(f"symbolic_trace expects a Module or a function, got "
                            f"{type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.constants = self.graph._constants        # GraphModule takes them from the graph
        self._path_stack = []
        self._module_paths = {id(m): name for name, m in self.root.named_modules()}
        self.tensor_attrs = {}
        for kind in ("named_parameters", "named_buffers"):
            for name, t in getattr(self.root, kind)():
                self.tensor_attrs.setdefault(id(t), name)
        args = self._placeholders(fn, bound_self, concrete_args or {})
        self._thread = threading.get_ident()
        with _patch_lock:
            patcher = _Patcher()
            try:
                self._patcher, self._globals_done = patcher, set()
                self._patch(patcher)
                if bound_self:
                    self._patch_class_globals(type(root))
                else:
                    self._patch_globals(getattr(getattr(fn, "__func__", fn), "__globals__", None))
                    self._patch_cells(getattr(getattr(fn, "__func__", fn), "__closure__", None))
                result = fn(*bound_self, *args)
            finally:
                patcher.undo()
        self.graph.output(self.create_arg(result))
        self._traced_output(result)
        return self.graph

    def _traced_output(self, result):
        """What the traced function returned (its proxies), for tracers that keep it."""

    # torchlite's own implementation modules: their names for torchlite's functions are the
    # functions themselves (an op calling another must not record it)
    # (torchlite.nn's modules too: a user's subclass of a layer is traced through, and its
    # class's modules were patched, which broke code comparing a stored function with its own
    # private alias: transformer.py's `act in (_F_RELU, _F_GELU)` missed the layer's F.relu,
    # which then ran on a Proxy.  Its layers reach torchlite's functions as F.x.)
    _UNPATCHED_MODULES = ("torchlite._", "torchlite.fx.", "torchlite.jit.", "torchlite.compiler.",
                          "torchlite.autograd.", "torchlite.onnx.", "torchlite.nn.")

    def _patch_class_globals(self, cls):
        """_patch_globals for the modules that define cls and its bases (their methods are
        the code a traced-through module runs)."""
        for c in cls.__mro__:
            mod = sys.modules.get(c.__module__ or "")
            if mod is not None and c is not object:
                self._patch_globals(vars(mod))
            if c is not object:
                # a class made inside a function reads the names it imported there through
                # its methods' closure cells (`from torchlite.nn.functional import relu` in a
                # factory), which its module's globals do not hold
                if ("cls", id(c)) not in self._globals_done and \
                        not (c.__module__ or "").startswith(self._UNPATCHED_MODULES):
                    self._globals_done.add(("cls", id(c)))
                    for v in list(vars(c).values()):
                        fn = getattr(v, "__func__", v)
                        if isinstance(fn, property):
                            fn = fn.fget
                        self._patch_cells(getattr(fn, "__closure__", None))

    def _patch_cells(self, closure):
        """The traced function's closure cells holding one of those functions (`fn = F.relu`
        in the enclosing scope), patched as _patch_globals patches names."""
        for cell in closure or ():
            try:
                v = cell.cell_contents
            except ValueError:              # an empty cell
                continue
            r = self._replacements.get(id(v))
            if r is not None and r[0] is v:
                self._patcher.set_cell(cell, r[1])

    def _patch_globals(self, g):
        """A module's global names bound to one of the functions the trace patched in
        torchlite's namespaces (`from torchlite import flatten`, `from torchlite.nn.functional
        import relu`) get the patched form too, so the call records as `torchlite.flatten(...)`
        does (PyTorch's proxies catch such calls through __torch_function__)."""
        if g is None or id(g) in self._globals_done:
            return
        self._globals_done.add(id(g))
        name = g.get("__name__") or ""
        if name == "torchlite" or name.startswith(self._UNPATCHED_MODULES):
            return
        for key, v in list(g.items()):
            r = self._replacements.get(id(v))
            if r is not None and r[0] is v:
                self._patcher.set(g, key, r[1], is_dict=True)

    def _placeholders(self, fn, bound_self, concrete_args):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[len(bound_self):]
        for name in concrete_args:
            if name not in sig.parameters:
                raise TraceError(f"concrete_args: {fn.__name__} has no argument {name!r}")
        args = []
        for p in params:
            if p.kind == p.VAR_KEYWORD:
                raise TraceError(f"cannot trace a forward that takes **{p.name}")
            if p.name in concrete_args:
                v = concrete_args[p.name]
                self.graph.placeholder(p.name, default_value=v, has_default=True)
                args.append(v)
                continue
            if p.kind == p.VAR_POSITIONAL:
                args.append(self.proxy(self.graph.placeholder("*" + p.name)))
                continue
            default = p.default is not p.empty
            node = self.graph.placeholder(p.name, default_value=p.default if default else None,
                                          has_default=default)
            args.append(self.proxy(node))
        return args

    def _patch(self, patcher):
        from ..nn.modules.module import Module
        tracer = self
        original_call = Module.__call__
        original_getattr = Module.__getattr__
        cache = {}

        def module_call(mod, *args, **kwargs):
            # (another thread's calls, and the real runs a subclass makes, are not traced)
            if tracer._suspended or id(mod) not in tracer._module_paths \
                    or threading.get_ident() != tracer._thread:
                return original_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: original_call(mod, *a, **k),
                                      args, kwargs)

        def module_getattr(mod, name):
            value = original_getattr(mod, name)
            if not tracer._suspended and id(mod) in tracer._module_paths \
                    and id(value) in tracer.tensor_attrs and threading.get_ident() == tracer._thread:
                return tracer.getattr(name, value, cache)
            return value
        patcher.set(Module, "__call__", module_call)
        patcher.set(Module, "__getattr__", module_getattr)
        self._replacements = {}     # id(function) -> (function, what replaced it)
        for path in self.patched_namespaces:
            mod = sys.modules.get(path)
            if mod is None:
                continue
            for name, v in list(vars(mod).items()):
                if (not name.startswith("_") or name in _PRIVATE_RECORDED) and _is_function(v) \
                        and not hasattr(v, "_fx_original"):
                    w = _proxy_aware(v)
                    patcher.set(mod, name, w)
                    self._replacements[id(v)] = (v, w)
        for module, cls, name in _AUTOWRAP_STATIC:
            owner = getattr(sys.modules.get(module), cls, None)
            fn = owner.__dict__.get(name) if owner is not None else None
            if isinstance(fn, staticmethod):
                patcher.set(owner, name, staticmethod(_proxy_aware(fn.__func__)))
        for g, name in _wrapped_globals:
            fn = g.get(name)
            if fn is not None and not hasattr(fn, "_fx_original"):
                patcher.set(g, name, _proxy_aware(fn), is_dict=True)
        for fn in self.autowrap_functions:
            g = fn.__globals__ if hasattr(fn, "__globals__") else None
            if g is not None and g.get(fn.__name__) is fn:
                patcher.set(g, fn.__name__, _proxy_aware(fn), is_dict=True)
        if "len" in {n for _, n in _wrapped_globals}:
            patcher.set(builtins, "len", _proxy_aware(builtins.len))


def symbolic_trace(root, concrete_args=None):
    """The GraphModule of root's forward (a Module) or of root (a function), traced on
    Proxies: the modules, functions and tensor ops it runs, as a Graph with the Python code
    that replays it."""
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if not inspect.isfunction(root) else root.__name__
    return GraphModule(tracer.root, graph, name)
