"""Proxy: the stand-in for a tensor while a function is traced (PyTorch's torch.fx.Proxy).

Everything done to a Proxy becomes a node of the tracer's graph instead of a computation:
operators (x + y is operator.add), indexing (operator.getitem), method calls (x.relu() is a
call_method node) and attributes (x.shape is getattr).  torchlite's functions take Proxies
too while a trace runs (the Tracer lets them record themselves).  A Proxy has no value, so
Python control flow that needs one (if, while, len, iteration) cannot be traced: it raises
TraceError naming the line."""
from __future__ import annotations

import bisect
import builtins
import dis
import linecache
import operator
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, NoReturn

__all__ = ["Proxy", "Attribute", "TraceError", "SymInt"]


class TraceError(ValueError):
    """Symbolic tracing met something it cannot record (PyTorch's torch.fx.proxy.TraceError)."""


def _user_line():
    """'file:line: source' of the line being traced: the first frame outside torchlite (or,
    when the traced code is torchlite's own, outside torchlite.fx)."""
    def first(outside):
        f = sys._getframe(2)
        while f is not None and f.f_globals.get("__name__", "").startswith(outside):
            f = f.f_back
        return f
    f = first("torchlite") or first("torchlite.fx")
    if f is None:
        return ""
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f"\n  File \"{f.f_code.co_filename}\", line {f.f_lineno}, in {f.f_code.co_name}" \
           f"\n    {src}"


class Proxy:
    """A value of a graph being traced: its `node`, and the `tracer` recording."""

    __slots__ = ("node", "tracer")

    def __init__(self, node: Any, tracer: Any | None = None) -> None:
        object.__setattr__(self, "node", node)
        object.__setattr__(self, "tracer", tracer)

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str) -> Attribute:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise TraceError(f"symbolically traced variables cannot be assigned attributes "
                         f"('{name}'){_user_line()}")

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    # ---- what needs a value ----------------------------------------------------------------
    def __bool__(self) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         f"flow{_user_line()}")

    def __iter__(self) -> Iterator[Proxy]:
        # `n, c, h, w = x.shape`: the caller is unpacking a known number of values, so each is
        # this proxy's item (as PyTorch's proxies do); any other iteration needs a length
        count = _unpack_count(sys._getframe(1))
        if count is not None:
            return iter([self[i] for i in range(count)])
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         f"See the torch.fx docs on pytorch.org for a more detailed explanation "
                         f"of what types of control flow can be traced{_user_line()}")

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torchlite.fx.wrap('len') at "
                           f"module scope{_user_line()}")

    def __index__(self) -> int:
        raise TraceError(f"symbolically traced variables cannot be used as an index or a "
                         f"size{_user_line()}")

    def __float__(self) -> float:
        raise TraceError(f"symbolically traced variables cannot be converted to float"
                         f"{_user_line()}")

    def __int__(self) -> int:
        raise TraceError(f"symbolically traced variables cannot be converted to int"
                         f"{_user_line()}")

    def __hash__(self) -> int:
        return id(self)

    def __contains__(self, item: Any) -> bool:
        raise TraceError(f"symbolically traced variables cannot be used with 'in'{_user_line()}")

    def keys(self) -> NoReturn:       # **proxy in a call
        raise TraceError(f"symbolically traced variables cannot be unpacked with **"
                         f"{_user_line()}")


class Attribute(Proxy):
    """proxy.name: a call_method node when called, else a getattr node (made when first
    needed)."""

    __slots__ = ("_root", "_attr", "_node")

    def __init__(self, root: Proxy, attr: str) -> None:
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_attr", attr)
        object.__setattr__(self, "tracer", root.tracer)
        object.__setattr__(self, "_node", None)

    @property
    def node(self) -> Any:
        if self._node is None:
            p = self.tracer.create_proxy("call_function", builtins.getattr,
                                         (self._root, self._attr), {})
            object.__setattr__(self, "_node", p.node)
        return self._node

    def __call__(self, *args, **kwargs) -> Proxy:
        return self.tracer.create_proxy("call_method", self._attr, (self._root,) + args, kwargs)

    def __repr__(self) -> str:
        return f"Attribute({self._root!r}.{self._attr})"


def _binary(op):
    def fn(self, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return fn


def _reflected(op):
    def fn(self, other: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (other, self), {})
    return fn


def _unary(op):
    def fn(self) -> Proxy:
        return self.tracer.create_proxy("call_function", op, (self,), {})
    return fn


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow), ("matmul", operator.matmul),
                   ("lshift", operator.lshift), ("rshift", operator.rshift),
                   ("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)):
    setattr(Proxy, f"__{_name}__", _binary(_op))
    setattr(Proxy, f"__r{_name}__", _reflected(_op))
for _name, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge),
                   ("getitem", operator.getitem)):
    setattr(Proxy, f"__{_name}__", _binary(_op))
for _name, _op in (("neg", operator.neg), ("pos", operator.pos), ("invert", operator.invert),
                   ("abs", operator.abs)):
    setattr(Proxy, f"__{_name}__", _unary(_op))


class SymInt(int):
    """A size read from a traced tensor (x.shape[1], x.size(0)) where the tracer keeps sizes
    symbolic: it computes as its example value, and an op that takes it records where it
    came from (its `node`, made when first needed), so the graph computes the size from the
    input instead of fixing it.  Arithmetic on it (+, -, *, //) stays symbolic."""

    def __new__(cls, value: int, tracer: Any, make_node: Callable[[], Any]) -> SymInt:
        obj = int.__new__(cls, value)
        obj.tracer = tracer
        obj._make = make_node
        obj._node = None
        return obj

    @property
    def node(self) -> Any:
        if self._node is None:
            self._node = self._make()
        return self._node

    def _op(self, fn, other, reflected=False):
        value = fn(int(other), int(self)) if reflected else fn(int(self), int(other))
        if not isinstance(value, int):
            return value
        tracer = self.tracer

        def make():
            a = other.node if isinstance(other, SymInt) else other
            args = (a, self.node) if reflected else (self.node, a)
            return tracer.create_node("call_function", fn, args, {})
        return type(self)(value, tracer, make)

    def __add__(self, o: Any) -> SymInt:
        return self._op(operator.add, o) if isinstance(o, int) else NotImplemented

    def __radd__(self, o: Any) -> SymInt:
        return self._op(operator.add, o, True) if isinstance(o, int) else NotImplemented

    def __sub__(self, o: Any) -> SymInt:
        return self._op(operator.sub, o) if isinstance(o, int) else NotImplemented

    def __rsub__(self, o: Any) -> SymInt:
        return self._op(operator.sub, o, True) if isinstance(o, int) else NotImplemented

    def __mul__(self, o: Any) -> SymInt:
        return self._op(operator.mul, o) if isinstance(o, int) else NotImplemented

    def __rmul__(self, o: Any) -> SymInt:
        return self._op(operator.mul, o, True) if isinstance(o, int) else NotImplemented

    def __floordiv__(self, o: Any) -> SymInt:
        return self._op(operator.floordiv, o) if isinstance(o, int) else NotImplemented

    def __repr__(self) -> str:
        return f"SymInt({int(self)})"


def _unpack_count(frame):
    """The number of values the instruction frame is running unpacks into, or None when it
    is not an unpacking (UNPACK_SEQUENCE; a starred target's UNPACK_EX is not one)."""
    code = frame.f_code
    instructions = list(dis.get_instructions(code))
    i = bisect.bisect_left([ins.offset for ins in instructions], frame.f_lasti)
    if i < len(instructions) and instructions[i].opname == "UNPACK_SEQUENCE":
        return instructions[i].argval
    return None
