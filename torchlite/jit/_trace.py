"""torchlite.jit.trace: record the ops one real run executes (PyTorch's torch.jit.trace).

The run uses torchlite.fx's tracer with proxies that carry their real values: every op both
computes (on the example inputs) and becomes a node.  What the run decides from values is
fixed into the graph, as in PyTorch: an `if` on a tensor takes the branch the example took,
`x.shape[0]` is the example's size, a loop runs as many times.  So, unlike symbolic tracing,
any Python control flow traces, and the result is right only for inputs that would take the
same path (check_trace compares it with the module on the example inputs).  torchlite.nn's
own layers stay whole (call_module nodes), as fx does."""
from __future__ import annotations

import builtins
import contextlib
import operator
import threading

from .._tensor import Tensor
from ..fx._symbolic_trace import Tracer
from ..fx.graph_module import GraphModule
from ..fx.node import map_aggregate
from ..fx.proxy import Attribute, Proxy, SymInt

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["trace", "TracedModule", "TracingCheckError", "is_tracing"]

_state = threading.local()


def is_tracing() -> bool:
    """True while torchlite.jit.trace is recording (PyTorch's torch.jit.is_tracing)."""
    return getattr(_state, "depth", 0) > 0


class TracingCheckError(RuntimeError):
    """The traced module disagrees with the original on the example inputs."""


def _value(x):
    def real(v):
        if isinstance(v, (_ValueProxy, _ValueAttribute)):
            return v.value
        if isinstance(v, SymInt):
            return int(v)
        return v
    return map_aggregate(x, real)


def _holds_tensor(x):
    found = []
    map_aggregate(x, lambda v: found.append(True) if isinstance(v, Tensor) else None)
    return bool(found)


def _holds_symint(x):
    found = []
    map_aggregate(x, lambda v: found.append(True) if isinstance(v, SymInt) else None)
    return bool(found)


class _ValueProxy(Proxy):
    """A proxy with the real value it stands for: what needs a value gets it."""

    __slots__ = ("value",)

    def __init__(self, node, tracer, value):
        super().__init__(node, tracer)
        object.__setattr__(self, "value", value)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        attr = getattr(self.value, name)
        if name == "shape" and self.tracer.symbolic_sizes:
            return self.tracer.symbolic_shape(self, attr)
        if callable(attr):
            return _ValueAttribute(self, name)
        if isinstance(attr, Tensor):          # x.T, x.mT, x.grad: recorded
            return self.tracer.create_proxy("call_function", builtins.getattr, (self, name), {})
        return attr                            # shape, dtype, device, ...: fixed

    def __bool__(self):
        return bool(self.value)

    def __index__(self):
        return self.value.__index__()

    def __int__(self):
        return int(self.value)

    def __float__(self):
        return float(self.value)

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        return (self[i] for i in range(len(self.value)))

    def __contains__(self, item):
        return _value(item) in self.value


class _ValueAttribute(Attribute):
    """proxy.method, called: a call_method node, its value computed."""

    __slots__ = ()

    @property
    def value(self):
        return getattr(self._root.value, self._attr)


class _RunTracer(Tracer):
    """fx's tracer on value-carrying proxies: each op runs on the real values, and becomes
    a node when it returns a tensor (a size or a flag it returns is fixed as a constant)."""

    symbolic_sizes = False      # ONNX export: sizes read from inputs stay symbolic
    symint_class = SymInt       # what a symbolic size is (compile's records its uses)

    def symbolic_shape(self, proxy, shape):
        """proxy.shape as a tuple of SymInts sharing one getattr node."""
        holder = []

        def shape_node():
            if not holder:
                holder.append(self.create_node("call_function", builtins.getattr,
                                               (proxy.node, "shape"), {}))
            return holder[0]

        def item(i):
            return lambda: self.create_node("call_function", operator.getitem,
                                            (shape_node(), i), {})
        return tuple(self.symint_class(s, self, item(i)) for i, s in enumerate(shape))

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        if kind == "placeholder" or kind == "get_attr":
            return super().create_proxy(kind, target, args, kwargs, name, type_expr)
        if kind == "call_method" and target == "size" and self.symbolic_sizes \
                and isinstance(args[0], _ValueProxy):
            sizes = self.symbolic_shape(args[0], args[0].value.shape)
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            return sizes if dim is None else sizes[dim]
        real_args, real_kwargs = _value(args), _value(kwargs)
        self._suspended = True          # the real run records nothing
        try:
            if kind == "call_function":
                value = target(*real_args, **real_kwargs)
            elif kind == "call_method":
                value = getattr(real_args[0], target)(*real_args[1:], **real_kwargs)
            else:
                value = self._run_module(target, real_args, real_kwargs)
        finally:
            self._suspended = False
        if not _holds_tensor(value):
            if self.symbolic_sizes and type(value) is int and _holds_symint((args, kwargs)):
                node = self.create_node(kind, target, self.create_arg(args),
                                        self.create_arg(kwargs), name, type_expr)
                return self.symint_class(value, self, lambda: node)
            return value
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs),
                                name, type_expr)
        return self._wrap(node, value)

    def _wrap(self, node, value):
        if isinstance(value, Tensor):
            return _ValueProxy(node, self, value)
        if isinstance(value, (tuple, list)):     # a tuple result: one getitem per element
            items = []
            for i, v in enumerate(value):
                if isinstance(v, Tensor) or (isinstance(v, (tuple, list)) and _holds_tensor(v)):
                    items.append(self._wrap(self.create_node(
                        "call_function", operator.getitem, (node, i), {}), v))
                else:
                    items.append(v)
            return type(value)(items) if not hasattr(value, "_fields") else type(value)(*items)
        return _ValueProxy(node, self, value)

    def _run_module(self, path, args, kwargs):
        mod = self.root.get_submodule(path) if path else self.root
        return self._module_call(mod, *args, **kwargs)

    def attr_proxy(self, node, value):
        return _ValueProxy(node, self, value)

    def trace_run(self, root, example_inputs, example_kwarg_inputs):
        from ..nn.modules.module import Module
        self._module_call = Module.__call__      # the real call, kept before trace patches it
        values = list(example_inputs) + list((example_kwarg_inputs or {}).values())
        names = list(example_kwarg_inputs) if example_kwarg_inputs else None
        self._example = (values, names)
        try:
            return self.trace(root)         # trace raises TypeError for what is not callable
        finally:
            # the tracer sits in reference cycles (its recording functions' closures), so
            # the example values it held would live until the cyclic collector ran
            self._example = None

    def _placeholders(self, fn, bound_self, concrete_args):
        import inspect
        values, names = self._example
        sig = inspect.signature(fn)
        all_params = list(sig.parameters.values())[len(bound_self):]
        params = [p for p in all_params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        star = next((p for p in all_params if p.kind == p.VAR_POSITIONAL), None)
        if names is None and star is not None and len(values) > len(params):
            # *args: one input per example value beyond the named ones
            extra = len(values) - len(params)
            params = params + [inspect.Parameter(f"{star.name}_{i}", inspect.Parameter.POSITIONAL_ONLY)
                               for i in range(extra)]
        if names is None:
            if len(values) > len(params):
                raise TypeError(f"trace: {len(values)} example inputs for a forward that takes "
                                f"{len(params)}")
            params = params[:len(values)]
            args = []
            for p, v in zip(params, values):
                node = self.graph.placeholder(p.name)
                args.append(_ValueProxy(node, self, v) if isinstance(v, Tensor) else v)
            return args
        return self._placeholders_with_names(fn, sig, params, values, names)

    def _placeholders_with_names(self, fn, sig, params, values, names):
        """Placeholders for positional example inputs followed by named ones (the graph's
        inputs in that order), and the positional call of fn that puts each where its
        parameter is (parameters between them keep their defaults)."""
        n_pos = len(values) - len(names)
        if n_pos > len(params):
            raise TypeError(f"trace: {n_pos} positional example inputs for a forward that takes "
                            f"{len(params)}")
        for n in names:
            p = sig.parameters.get(n)
            if p is None or p not in params or params.index(p) < n_pos:
                raise TypeError(f"trace: example_kwarg_inputs names {n!r}, which is not a "
                                f"positional-or-keyword parameter of {getattr(fn, '__name__', fn)} "
                                f"left after the positional example inputs")
        given = {}
        for name, v in zip([p.name for p in params[:n_pos]] + list(names), values):
            node = self.graph.placeholder(name)
            given[name] = _ValueProxy(node, self, v) if isinstance(v, Tensor) else v
        last = max((i for i, p in enumerate(params) if p.name in given), default=-1)
        args = []
        for p in params[:last + 1]:
            if p.name in given:
                args.append(given[p.name])
            elif p.default is not p.empty:
                args.append(p.default)
            else:
                raise TypeError(f"trace: no example input for parameter {p.name!r}")
        return args


class TracedModule(GraphModule):
    """What trace returns: a GraphModule (`.graph`, `.code`) that replays the recorded ops."""

    def save(self, f: Any, _extra_files: dict[str, Any] | None = None) -> None:
        """torchlite.jit.save(self, f): ScriptModule.save's spelling."""
        from ._serialization import save
        save(self, f, _extra_files=_extra_files)


@contextlib.contextmanager
def _tracing():
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def trace(func: Module | Callable[..., Any], example_inputs: Tensor | tuple[Any, ...] | None = None,
          optimize: Any = None, check_trace: bool = True, check_inputs: list[Any] | None = None,
          check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None,
          example_kwarg_inputs: dict[str, Any] | None = None, _store_inputs: bool = True,
          _symbolic_sizes: bool = False) -> GraphModule:
    """Record the ops that func (a Module or a function) runs on example_inputs (a tensor or
    a tuple of them; or example_kwarg_inputs, a dict) as a TracedModule.  Sizes and branches
    are those of the example run.  check_trace: run the traced module on the example inputs
    (and on each of check_inputs) and raise TracingCheckError unless it matches func."""
    from ..autograd.grad_mode import no_grad
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("trace: example_inputs (or example_kwarg_inputs) must be given")
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs or ())
    tracer = _RunTracer()
    tracer.symbolic_sizes = _symbolic_sizes
    with _tracing(), no_grad():
        graph = tracer.trace_run(func, example_inputs, example_kwarg_inputs)
    graph.eliminate_dead_code()
    name = getattr(func, "__name__", None) or type(func).__name__
    traced = TracedModule(tracer.root, graph, type(func).__name__ if hasattr(func, "forward")
                          else name)
    if hasattr(func, "training"):
        traced.train(func.training)
    if check_trace:
        checks = [example_inputs] if example_kwarg_inputs is None else []
        for extra in check_inputs or ():
            checks.append(tuple(extra) if isinstance(extra, (tuple, list)) else (extra,))
        for inputs in checks:
            _check(func, traced, inputs, check_tolerance)
    return traced


def _check(func, traced, inputs, tol):
    from ..autograd.grad_mode import no_grad
    from .._ops.elementwise import allclose
    with no_grad():
        want, got = func(*inputs), traced(*inputs)
    flat_w, flat_g = [], []
    map_aggregate(want, flat_w.append)
    map_aggregate(got, flat_g.append)
    if len(flat_w) != len(flat_g):
        raise TracingCheckError("the traced module returns a different structure")
    for w, g in zip(flat_w, flat_g):
        if isinstance(w, Tensor):
            if not isinstance(g, Tensor) or tuple(w.shape) != tuple(g.shape) or \
                    not allclose(g.double(), w.double(), rtol=tol, atol=tol, equal_nan=True):
                raise TracingCheckError(
                    "Tracer-produced graph and the traced function disagree on the check "
                    "inputs (did the function's control flow depend on values or sizes the "
                    "example fixed?)")
        elif w != g:
            raise TracingCheckError(f"the traced module returns {g!r} where the function "
                                    f"returns {w!r}")
