"""One operation of a torchlite.fx Graph (PyTorch's torch.fx.Node).

A node's `op` is one of PyTorch's six kinds:

    placeholder     an input of the graph's function; target: the argument's name
    get_attr        a parameter, buffer or constant of the owning module; target: its path
    call_function   a free function (torchlite.relu, operator.add, ...); target: the function
    call_method     a Tensor method; target: its name; args[0] is the tensor
    call_module     a submodule's forward; target: the submodule's path
    output          what the graph returns; args[0] (any structure of nodes)

`args` and `kwargs` hold nodes and plain values, in any nesting of tuples, lists, dicts and
slices.  Each node knows its `users` (the nodes that take it as an argument), kept up to date
when arguments change, so passes can rewrite the graph safely."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

__all__ = ["Node", "map_arg", "map_aggregate"]

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """a with fn applied to every leaf (tuples, lists, dicts and slices are walked)."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(e, fn) for e in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped     # namedtuples
    if isinstance(a, list):
        return [map_aggregate(e, fn) for e in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """a with fn applied to every Node inside it."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """An operation in a Graph.  Build nodes through Graph's methods (create_node,
    call_function, ...), which place them in the graph's order."""

    def __init__(self, graph: Any, name: str, op: str, target: Callable[..., Any] | str,
                 args: Sequence[Any], kwargs: Mapping[str, Any], type_expr: Any | None = None) -> None:
        if op not in OPS:
            raise ValueError(f"Node: op must be one of {OPS}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") \
                and not isinstance(target, str):
            raise ValueError(f"Node: the target of a {op} node must be a string, got "
                             f"{target!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node: the target of a call_function node must be callable, got "
                             f"{target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = type_expr
        self.users = {}                 # node -> None, in the order they started using this
        self.meta = {}                  # what passes record (ShapeProp: 'tensor_meta')
        self._prev = self._next = self
        self._erased = False
        self._args, self._kwargs = (), {}
        self._input_nodes = {}
        self._set_args(tuple(args), dict(kwargs))

    # ---- arguments -----------------------------------------------------------------------
    @property
    def args(self) -> tuple[Any, ...]:
        return self._args

    @args.setter
    def args(self, value: Sequence[Any]) -> None:
        self._set_args(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: Mapping[str, Any]) -> None:
        self._set_args(self._args, dict(value))

    def _set_args(self, args, kwargs):
        for n in self._input_nodes:
            n.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        found = {}
        map_arg((args, kwargs), lambda n: found.setdefault(n, None))
        self._input_nodes = found
        for n in found:
            n.users.setdefault(self, None)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this one takes as arguments, each once, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, value: Any) -> None:
        args = list(self._args)
        args[idx] = value
        self.args = args

    def update_kwarg(self, key: str, value: Any) -> None:
        kwargs = dict(self._kwargs)
        kwargs[key] = value
        self.kwargs = kwargs

    def replace_input_with(self, old: Node, new: Node) -> None:
        """Use `new` wherever this node takes `old`."""
        self._set_args(*map_arg((self._args, self._kwargs), lambda n: new if n is old else n))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True) -> list[Node]:
        """Make every user of this node (for which delete_user_cb says True) take
        `replace_with` instead; returns the users changed."""
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for u in changed:
            u.replace_input_with(self, replace_with)
        return changed

    # ---- order -----------------------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move node x to just before this one."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Move node x to just after this one."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- printing --------------------------------------------------------------------------
    def format_node(self) -> str:
        """One line, as PyTorch prints a node: `%name : [num_users=k] = op[target=t](args)`."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self.args[0])}"
        target = self.target if isinstance(self.target, str) else _target_name(self.target)
        return (f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={target}]"
                f"(args = {_fmt(self.args)}, kwargs = {_fmt(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


PUBLIC_NAMESPACES = ("torchlite", "torchlite.nn.functional", "torchlite.linalg",
                     "torchlite.special", "torchlite.fft")


def public_name(fn):
    """The dotted name a user writes for fn: its public torchlite path, operator.x, a
    builtin's name; None when it has none of these."""
    import builtins
    import operator
    import sys
    name = getattr(fn, "__name__", None)
    if not name:
        return None
    for path in PUBLIC_NAMESPACES:
        mod = sys.modules.get(path)
        if mod is not None and mod.__dict__.get(name) is fn:
            return f"{path}.{name}"
    if getattr(operator, name, None) is fn:
        return f"operator.{name}"
    if getattr(builtins, name, None) is fn:
        return name
    return None


def _target_name(fn):
    public = public_name(fn)
    if public is not None:
        return public
    mod = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{mod}.{name}" if mod else name


def _fmt(a):
    return repr(map_arg(a, lambda n: _Ref(n.name)))


class _Ref:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"%{self.name}"
