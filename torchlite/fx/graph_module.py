"""GraphModule: an nn.Module whose forward is the Python code of a Graph (PyTorch's
torch.fx.GraphModule).

It holds the submodules, parameters and buffers its graph's call_module and get_attr nodes
name, copied (by reference) from the module it was made from, at the same paths; so its
state_dict, parameters() and training work as the original's.  `recompile()` regenerates the
code after the graph changes; `.code` shows it."""
from __future__ import annotations

import itertools
import linecache
from typing import TYPE_CHECKING

from ..nn.modules.module import Module
from .graph import Graph

if TYPE_CHECKING:
    from typing import Any

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(src, dst, path):
    """dst.<path> = src.<path>, making empty Modules for the missing parents."""
    *parents, last = path.split(".")
    s, d = src, dst
    for p in parents:
        s = getattr(s, p)
        child = d._modules.get(p) if isinstance(d, Module) else None
        if child is None:
            child = Module()
            setattr(d, p, child)
        d = child
    value = getattr(s, last)
    _set(d, last, value)


def _set(mod, name, value):
    from .._tensor import Tensor
    from ..nn.parameter import Parameter
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        mod.register_buffer(name, value)
    else:
        setattr(mod, name, value)


class GraphModule(Module):
    """A module that runs `graph`.  root: the Module (or a dict of path -> object) that the
    graph's call_module and get_attr targets are taken from."""

    def __new__(cls, *args, **kwargs) -> GraphModule:
        # each GraphModule gets a class of its own, so that its generated forward does not
        # replace another's
        if getattr(cls, "_fx_own_class", False):
            return super().__new__(cls)
        own = type(cls.__name__, (cls,), {"_fx_own_class": True})
        return super().__new__(own)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphModule: graph must be a torchlite.fx.Graph, not "
                            f"{type(graph).__name__}")
        constants = graph._constants
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for n in graph.nodes:
                if n.op in ("get_attr", "call_module") and n.target not in constants:
                    _copy_attr(root, self, n.target)
        elif isinstance(root, dict):
            for n in graph.nodes:
                if n.op in ("get_attr", "call_module") and n.target not in constants:
                    if n.target not in root:
                        raise RuntimeError(f"Node {n} referenced target {n.target} but that "
                                           f"target was not provided in ``root``!")
                    _copy_attr(_DictRoot(root), self, n.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        for path, t in constants.items():
            object.__setattr__(self, path, t)          # a constant: not in the state_dict
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated forward."""
        return self._code

    def recompile(self) -> Any:
        """Generate forward from the graph again (call after changing the graph)."""
        code = self._graph.python_code("self")
        filename = f"<eval_with_key>.{next(_counter)}"
        # registered with linecache, so tracebacks through the generated forward show it
        linecache.cache[filename] = (len(code.src), None, code.src.splitlines(True), filename)
        glb = dict(code.globals)
        exec(compile(code.src, filename, "exec"), glb)
        object.__setattr__(self, "_code", code.src)
        type(self).forward = glb["forward"]
        return code

    def print_readable(self, print_output: bool = True) -> str:
        text = f"class {type(self).__name__}(torchlite.nn.Module):\n" + \
            "\n".join("    " + line for line in self._code.splitlines())
        if print_output:
            print(text)
        return text

    def __repr__(self) -> str:
        return super().__repr__() + "\n\n" + self._code if hasattr(self, "_code") \
            else super().__repr__()

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and deep-copied) as its class name, its module state and its graph
        (Graph.__reduce__); unpickling generates forward from the graph again.  A graph's
        call_function targets are pickled by reference, so they must be importable (a lambda
        is not), as in PyTorch."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild_graph_module, (type(self).__name__, state, self._graph))


def _rebuild_graph_module(class_name, state, graph):
    """The GraphModule GraphModule.__reduce__ took apart."""
    gm = GraphModule.__new__(GraphModule)         # its own class, as every GraphModule
    type(gm).__name__ = type(gm).__qualname__ = class_name
    gm.__dict__.update(state)
    gm.graph = graph                              # owning module, and forward generated
    return gm


class _DictRoot:
    """A dict of path -> object, read with getattr as a module tree would be."""

    def __init__(self, d, prefix=""):
        self._d, self._prefix = d, prefix

    def __getattr__(self, name):
        key = self._prefix + name
        if key in self._d:
            return self._d[key]
        return _DictRoot(self._d, key + ".")
