"""Running and rewriting a graph node by node (PyTorch's torch.fx.Interpreter and
Transformer).

Interpreter.run(*args) evaluates a GraphModule's graph one node at a time, calling the
method named after each node's op (placeholder, get_attr, call_function, call_method,
call_module, output); a subclass overrides those to observe or change what runs (ShapeProp
records shapes this way).  Transformer runs the same walk on Proxies of a new graph and
returns the new GraphModule: override its methods to rewrite nodes."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .graph import Graph
from .graph_module import GraphModule
from .node import map_arg
from .proxy import Proxy

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["Interpreter", "Transformer"]


def _fetch_attr(mod, target):
    obj = mod
    for i, part in enumerate(target.split(".")):
        if not hasattr(obj, part):
            raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
        obj = getattr(obj, part)
    return obj


class Interpreter:
    """Evaluates `module`'s graph (`graph` instead, when given) node by node."""

    def __init__(self, module: Module, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.graph = graph if graph is not None else module.graph
        self.garbage_collect_values = garbage_collect_values
        self.env = {}
        last_use = {}
        for n in self.graph.nodes:
            for a in n.all_input_nodes:
                last_use[a] = n
        self._frees = {}
        for value, user in last_use.items():
            self._frees.setdefault(user, []).append(value)

    def run(self, *args, initial_env: dict[Any, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for dead in self._frees.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Any) -> Any:
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def fetch_args_kwargs_from_env(self, n: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Any) -> Any:
        def load(x):
            if x not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {x}! Run "
                                   f"Graph.lint() to diagnose such issues")
            return self.env[x]
        return map_arg(args, load)

    # ---- one method per node kind ------------------------------------------------------------
    def placeholder(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from None

    def get_attr(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        return _fetch_attr(self.module, target)


class Transformer(Interpreter):
    """Rebuilds `module`'s graph node by node on Proxies of a new graph; transform() returns
    the GraphModule of the result.  Override the node methods to rewrite: return another
    proxy (or build several nodes) instead of the default copy."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        from ._symbolic_trace import Tracer
        self.tracer = Tracer()
        self.tracer.graph = self.new_graph
        self.tracer.root = module
        self.tracer.constants = self.new_graph._constants
        self.new_graph._constants.update(module.graph._constants)
        self.tracer.tensor_attrs = {}

    def placeholder(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy:
        default = bool(args)
        node = self.new_graph.placeholder(target, default_value=args[0] if default else None,
                                          has_default=default)
        return Proxy(node, self.tracer)

    def get_attr(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy:
        return Proxy(self.new_graph.get_attr(target), self.tracer)

    def call_function(self, target: Callable[..., Any], args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Proxy:
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The rewritten module."""
        self.env = {}
        for node in self.graph.nodes:
            if node.op == "output":
                out = self.map_nodes_to_values(node.args[0], node)
                self.new_graph.output(self.tracer.create_arg(out))
                break
            args, kwargs = self.fetch_args_kwargs_from_env(node)
            self.env[node] = getattr(self, node.op)(node.target, args, kwargs)
        return GraphModule(self.module, self.new_graph)
