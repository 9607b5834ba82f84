"""A torchlite.fx Graph: the ordered nodes of one function, and the Python code it stands for
(PyTorch's torch.fx.Graph).

Nodes live in a doubly linked list (inserting or erasing is O(1) anywhere, which is what graph
rewrites do most); `graph.nodes` walks it in order.  `python_code()` turns the graph back into
the source of `forward(self, ...)`, which GraphModule compiles and runs: readable names, one
line per node, infix operators where the node is one, and each value released after its last
use (so a generated forward holds no more memory than the eager one)."""
from __future__ import annotations

import builtins
import contextlib
import keyword
import math
import operator
import re
from typing import TYPE_CHECKING

from .node import Node, _target_name, map_aggregate, map_arg, public_name

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["Graph", "PythonCode"]

_INFIX = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
          operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
          operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&", operator.or_: "|",
          operator.xor: "^", operator.eq: "==", operator.ne: "!=", operator.lt: "<",
          operator.le: "<=", operator.gt: ">", operator.ge: ">="}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
# names the generated code needs for itself: no node is called these
_RESERVED = {"self", "torchlite", "operator", "device", "inf", "nan"} | set(dir(builtins))


class _NodeRef:
    """A node named in a pickled graph's arguments (Graph.__reduce__)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_NodeRef, (self.name,))


def _rebuild_graph(nodes, constants, tracer_cls):
    """The Graph that Graph.__reduce__ flattened: its nodes in order, with their names,
    arguments, types and meta."""
    g = Graph(tracer_cls=tracer_cls)
    made = {}

    def resolve(x):
        return made[x.name] if isinstance(x, _NodeRef) else x
    for name, op, target, args, kwargs, type_expr, meta in nodes:
        n = g.create_node(op, target, map_aggregate(args, resolve), map_aggregate(kwargs, resolve),
                          name, type_expr)
        if n.name != name:
            raise RuntimeError(f"unpickling a Graph: node {name!r} came back as {n.name!r}")
        n.meta = meta
        made[name] = n
    g._constants = dict(constants)
    return g


class PythonCode:
    """The source of a graph's function and the globals it needs."""

    def __init__(self, src: str, globals_: dict[str, Any]) -> None:
        self.src = src
        self.globals = globals_


class _Root:
    """The list's sentinel: the node before the first and after the last."""

    def __init__(self):
        self._prev = self._next = self


class _Nodes:
    def __init__(self, root, reverse=False):
        self._root, self._reverse = root, reverse

    def __iter__(self):
        n = self._root._prev if self._reverse else self._root._next
        while n is not self._root:
            following = n._prev if self._reverse else n._next
            if not n._erased:
                yield n
            n = following

    def __len__(self):
        return sum(1 for _ in self)

    def __reversed__(self):
        return iter(_Nodes(self._root, not self._reverse))

    def __repr__(self):
        return repr(list(self))


class Graph:
    """The nodes of a function, in order.  Create nodes with placeholder / get_attr /
    call_function / call_method / call_module / output (or create_node); they go where the
    insert point is (the end, or inside inserting_before / inserting_after)."""

    def __init__(self, owning_module: Module | None = None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root = _Root()
        self._names = {}
        self._insert = self._append_at_end
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._constants = {}        # get_attr path -> a tensor a tracer met that no module owns

    # ---- pickling and deep copies ------------------------------------------------------------
    def __reduce__(self) -> tuple[Any, ...]:
        """The nodes as a flat list, their argument nodes named (_NodeRef): pickling the
        linked nodes themselves would recurse once per node.  The owning module is not part of
        the graph's state (GraphModule sets it when it takes the graph back)."""
        def ref(n):
            return _NodeRef(n.name)
        nodes = [(n.name, n.op, n.target, map_arg(n.args, ref), map_arg(n.kwargs, ref), n.type,
                  n.meta) for n in self.nodes]
        return (_rebuild_graph, (nodes, self._constants, self._tracer_cls))

    # ---- the node list -----------------------------------------------------------------------
    @property
    def nodes(self) -> _Nodes:
        return _Nodes(self._root)

    def _append_at_end(self, n):
        p = self._root._prev
        p._next, n._prev, n._next, self._root._prev = n, p, self._root, n

    def find_nodes(self, *, op: str, target: Any = None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None) -> Iterator[None]:
        """New nodes go just before n (None: at the start)."""
        old = self._insert
        anchor = n if n is not None else self._root._next
        self._insert = (lambda x: anchor.prepend(x)) if anchor is not self._root \
            else self._append_at_end
        try:
            yield
        finally:
            self._insert = old

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None) -> Iterator[None]:
        """New nodes go just after n (None: at the start), each after the one before."""
        old = self._insert
        last = [n if n is not None else self._root]

        def insert(x):
            after = last[0]
            nxt = after._next
            after._next, x._prev, x._next, nxt._prev = x, after, nxt, x
            last[0] = x
        self._insert = insert
        try:
            yield
        finally:
            self._insert = old

    # ---- making nodes ------------------------------------------------------------------------
    def create_node(self, op: str, target: Callable[..., Any] | str, args: tuple[Any, ...] | None = None,
                    kwargs: dict[str, Any] | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        candidate = name if name is not None else _candidate_name(op, target)
        node = Node(self, self._unique_name(candidate), op, target, args or (), kwargs or {},
                    type_expr)
        self._insert(node)
        return node

    def placeholder(self, name: str, type_expr: Any | None = None, default_value: Any = None, *,
                    has_default: bool = False) -> Node:
        """An input of the function; with has_default, default_value is its default."""
        args = (default_value,) if has_default else ()
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple[Any, ...] | None = None,
                    kwargs: dict[str, Any] | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple[Any, ...] | None = None,
                    kwargs: dict[str, Any] | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any], args: tuple[Any, ...] | None = None,
                      kwargs: dict[str, Any] | None = None, type_expr: Any | None = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Any, type_expr: Any | None = None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of a node of another graph in this one, its argument nodes mapped by
        arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        n = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        n.meta = dict(node.meta)
        return n

    def graph_copy(self, g: Graph, val_map: dict[Node, Any]) -> Any:
        """Copy every node of graph g but its output into this one (val_map: g's node -> the
        copy, filled in); returns the value g's output returns, in this graph's nodes."""
        for n in g.nodes:
            if n.op == "output":
                return map_arg(n.args[0], lambda x: val_map[x])
            val_map[n] = self.node_copy(n, lambda x: val_map[x])
        return None

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node no other node uses."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        to_erase._set_args((), {})
        to_erase._remove_from_list()
        to_erase._erased = True

    def eliminate_dead_code(self) -> bool:
        """Erase the nodes whose values nothing uses (placeholders and outputs stay; so do
        in-place method calls, whose effect is not their value).  True when any went."""
        changed = False
        for n in reversed(self.nodes):
            if n.op in ("placeholder", "output") or n.users:
                continue
            if n.op == "call_method" and n.target.endswith("_") and not n.target.endswith("__"):
                continue
            self.erase_node(n)
            changed = True
        return changed

    # ---- checks and printing -----------------------------------------------------------------
    def lint(self) -> bool:
        """Check the graph: every argument a node of this graph defined earlier, names unique,
        one output at the end, and (with an owning module) every call_module / get_attr
        target present in it.  Raises RuntimeError naming the first problem."""
        seen, names = set(), set()
        outputs = 0
        for n in self.nodes:
            if n.graph is not self:
                raise RuntimeError(f"Node {n} does not belong to this Graph!")
            if n.name in names:
                raise RuntimeError(f"Node redefined name {n.name}!")
            names.add(n.name)
            for a in n.all_input_nodes:
                if a.graph is not self or a._erased:
                    raise RuntimeError(f"Argument '{a}' of Node '{n}' was used before it has "
                                       f"been defined! Please check that Nodes in the graph are "
                                       f"topologically ordered")
                if a not in seen:
                    raise RuntimeError(f"Argument '{a}' of Node '{n}' was used before it has "
                                       f"been defined! Please check that Nodes in the graph are "
                                       f"topologically ordered\n{self}")
            if n.op == "output":
                outputs += 1
            elif outputs:
                raise RuntimeError(f"Node {n} comes after the output node")
            seen.add(n)
            if self.owning_module is not None and n.op in ("call_module", "get_attr"):
                obj = self.owning_module
                for part in n.target.split("."):
                    if not hasattr(obj, part):
                        kind = "module" if n.op == "call_module" else "attribute"
                        raise RuntimeError(f"Node {n} target {n.target} references nonexistent "
                                           f"{kind} {part}")
                    obj = getattr(obj, part)
        if outputs > 1:
            raise RuntimeError("Graph has more than one output node")
        return True

    def print_tabular(self) -> None:
        """The nodes as a table: opcode, name, target, args, kwargs."""
        rows = [["opcode", "name", "target", "args", "kwargs"]]
        for n in self.nodes:
            target = n.target if isinstance(n.target, str) else _target_name(n.target)
            rows.append([n.op, n.name, str(target), _short(n.args), _short(n.kwargs)])
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        print("\n".join(lines))

    def __str__(self) -> str:
        params = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        body = "\n".join("    " + n.format_node() for n in self.nodes)
        return f"graph({params}):\n{body}"

    # ---- code ----------------------------------------------------------------------------------
    def python_code(self, root_module: str = "self") -> PythonCode:
        """The source of `def forward(self, <placeholders>)` and the globals it needs."""
        return _CodeGen(self, root_module).generate()

    # ---- names -----------------------------------------------------------------------------
    def _unique_name(self, candidate):
        base = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_"
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base) or base in _RESERVED:
            stem, n = base, 1                   # getattr -> getattr_1, getattr_2, ...
            name = f"{stem}_1"
        else:
            m = re.match(r"(.*)_(\d+)$", base)
            stem, n = (m.group(1), int(m.group(2))) if m else (base, 0)
            name = base
        while name in self._names:
            n += 1
            name = f"{stem}_{n}"
        self._names[name] = True
        return name


def _candidate_name(op, target):
    if op == "output":
        return "output"
    if isinstance(target, str):
        return target.lstrip("*").replace(".", "_")
    name = getattr(target, "__name__", None) or "fn"
    return name.strip("_") or "fn"


def _short(a):
    return repr(map_arg(a, lambda n: _Name(n.name)))


class _Name:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class _CodeGen:
    """Writes a graph as Python."""

    def __init__(self, graph, root):
        import torchlite
        self.graph, self.root = graph, root
        self.globals = {"torchlite": torchlite, "operator": operator, "device": torchlite.device,
                        "inf": math.inf, "nan": math.nan}
        self._consts = {}

    def generate(self):
        nodes = list(self.graph.nodes)
        last_use = {}
        for n in nodes:
            for a in n.all_input_nodes:
                last_use[a] = n
        frees = {}
        for value, user in last_use.items():
            frees.setdefault(user, []).append(value.name)
        params, body = [], []
        for n in nodes:
            if n.op == "placeholder":
                target = n.target
                if target.startswith("*"):
                    params.append(target)
                elif n.args:
                    params.append(f"{n.name} = {self.value(n.args[0])}")
                else:
                    params.append(n.name)
                continue
            line = self.line(n)
            dead = [v for v in frees.get(n, ()) if v != n.name] if n.op != "output" else []
            if dead:
                line += ";  " + " = ".join(dead) + " = None"
            body.append("    " + line)
        if not body or not body[-1].lstrip().startswith("return"):
            body.append("    return None")
        src = f"def forward({', '.join([self.root] + params)}):\n" + "\n".join(body) + "\n"
        return PythonCode(src, self.globals)

    def line(self, n):
        if n.op == "get_attr":
            return f"{n.name} = {_attr_path(self.root, n.target)}"
        if n.op == "call_module":
            return f"{n.name} = {_attr_path(self.root, n.target)}({self.call_args(n.args, n.kwargs)})"
        if n.op == "call_method":
            this, rest = n.args[0], n.args[1:]
            return f"{n.name} = {self.value(this)}.{n.target}({self.call_args(rest, n.kwargs)})"
        if n.op == "output":
            return f"return {self.value(n.args[0])}"
        fn = n.target
        if fn in _INFIX and len(n.args) == 2 and not n.kwargs:
            return f"{n.name} = {self.value(n.args[0])} {_INFIX[fn]} {self.value(n.args[1])}"
        if fn in _PREFIX and len(n.args) == 1 and not n.kwargs:
            return f"{n.name} = {_PREFIX[fn]}{self.value(n.args[0])}"
        if fn is operator.getitem and len(n.args) == 2 and not n.kwargs:
            return f"{n.name} = {self.value(n.args[0])}[{self.index(n.args[1])}]"
        if fn is builtins.getattr and len(n.args) == 2 and isinstance(n.args[1], str) \
                and n.args[1].isidentifier() and not n.kwargs:
            return f"{n.name} = {self.value(n.args[0])}.{n.args[1]}"
        return f"{n.name} = {self.function(fn)}({self.call_args(n.args, n.kwargs)})"

    def call_args(self, args, kwargs):
        parts = [self.value(a) for a in args]
        parts += [f"{k} = {self.value(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def index(self, a):
        if isinstance(a, tuple) and a:
            return ", ".join(self.index_item(e) for e in a) + ("," if len(a) == 1 else "")
        return self.index_item(a)

    def index_item(self, a):
        if isinstance(a, slice):
            parts = ["" if x is None else self.value(x) for x in (a.start, a.stop)]
            s = ":".join(parts)
            return s + (f":{self.value(a.step)}" if a.step is not None else "")
        if a is Ellipsis:
            return "..."
        return self.value(a)

    def value(self, a):
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple) and not hasattr(a, "_fields"):
            inner = ", ".join(self.value(e) for e in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.value(e) for e in a) + "]"
        if isinstance(a, dict) and all(isinstance(k, str) for k in a):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.value(a.start)}, {self.value(a.stop)}, {self.value(a.step)})"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, str)):
            return repr(a) if a is not Ellipsis else "..."
        if isinstance(a, float):
            if math.isnan(a):
                return "nan"
            if math.isinf(a):
                return "inf" if a > 0 else "-inf"
            return repr(a)
        return self.constant(a)

    def constant(self, a):
        """A global name for a value with no literal form (a dtype, a device, an object)."""
        import torchlite
        if isinstance(a, torchlite.dtype):
            return self.global_name(a, str(a).replace("torchlite.", ""))
        hint = getattr(self.graph, "constant_names", {}).get(id(a))    # (a name its maker gave)
        return self.global_name(a, hint or "_" + type(a).__name__.lower())

    def function(self, fn):
        """How the code names a function: its public torchlite path, operator.x, a builtin's
        name, or a global of its own."""
        public = public_name(fn)
        if public is not None:        # builtins' names are reserved: no node shadows them
            return public
        return self.global_name(fn, "_" + (getattr(fn, "__name__", None) or "fn").strip("_"))

    def global_name(self, value, base):
        """The generated code's global for `value` (one per object), named after `base`."""
        key = id(value)
        if key not in self._consts:
            base = re.sub(r"\W+", "_", base)
            name, k = base, 0
            while name in self.globals or name in self.graph._names:
                k += 1
                name = f"{base}_{k}"
            self.globals[name] = value
            self._consts[key] = name
        return self._consts[key]


def _attr_path(root, target):
    """`self.a.b`, or getattr(self.a, '0') for names that are not identifiers."""
    expr = root
    for part in target.split("."):
        expr = f"{expr}.{part}" if part.isidentifier() and not keyword.iskeyword(part) \
            else f"getattr({expr}, {part!r})"
    return expr
