"""torchlite.library: custom operators as PyTorch's torch.library defines them -- a Python
function made an op with a name, a fake (shape-only) implementation for the meta device, an
autograd formula and per-device kernels -- and torchlite.ops, where they are found by name.

    @torchlite.library.custom_op("mylib::scale", mutates_args=())
    def scale(x: Tensor, factor: float) -> Tensor:
        return x * factor

    @scale.register_fake
    def _(x, factor):
        return torchlite.empty_like(x)

    scale.register_autograd(lambda ctx, g: (g * ctx.factor, None),
                            setup_context=lambda ctx, inputs, output: setattr(ctx, "factor", inputs[1]))
    y = torchlite.ops.mylib.scale(x, 2.0)

What a call does: with a meta tensor among the inputs, the fake implementation runs; else the
kernel registered for the inputs' device (register_kernel), or the function itself.  The
kernel runs outside the autograd graph, as PyTorch's; when an input requires grad, the result
is recorded with the registered backward (an autograd.Function built from it), or, without
one, with a node whose backward raises PyTorch's "no autograd formula was registered" error.
mutates_args names the arguments the function writes in place; their version counters move
as for any in-place op.  The schema is inferred from the type annotations (every parameter
and the return need one, as PyTorch requires) and checked only that far: torchlite has no
dispatcher of its own to hand it to."""
from __future__ import annotations

import inspect
import typing
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["custom_op", "CustomOpDef", "register_fake", "register_autograd", "register_kernel",
           "infer_schema"]

_REGISTRY = {}          # "namespace::name" -> CustomOpDef


def _parse_name(name):
    if not isinstance(name, str) or name.count("::") != 1:
        raise ValueError(f"custom_op: expected the name as 'namespace::name', got {name!r}")
    ns, op = name.split("::")
    if not ns.isidentifier() or not op.isidentifier():
        raise ValueError(f"custom_op: the namespace and the name must be identifiers, got {name!r}")
    return ns, op


def _type_name(annotation, where):
    from ._tensor import Tensor
    names = {Tensor: "Tensor", int: "SymInt", float: "float", bool: "bool", str: "str",
             type(None): "()"}
    if annotation in names:
        return names[annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, typing.Sequence) and args and args[0] in names:
        return f"{names[args[0]]}[]"
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return _type_name(inner, where) + "?"
    raise ValueError(f"infer_schema(func): {where} has unsupported type {annotation}")


def infer_schema(prototype_function: Callable[..., Any], /, *, mutates_args: str | Iterable[str],
                 op_name: str | None = None) -> str:
    """The op's schema string from prototype_function's annotations (PyTorch's form:
    'name(Tensor x, float factor) -> Tensor'; 'Tensor(a0!)' marks a mutated argument)."""
    sig = inspect.signature(prototype_function)
    try:
        hints = typing.get_type_hints(prototype_function)
    except Exception:
        hints = {}
    mutated = set(mutates_args) if mutates_args != "unknown" else set()
    parts = []
    aliases = 0
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"infer_schema(func): *args and **kwargs are not supported (got {p})")
        if p.annotation is inspect.Parameter.empty:
            raise ValueError(f"infer_schema(func): Parameter {p.name} must have a type annotation. "
                             f"Got func with signature {sig})")
        t = _type_name(hints.get(p.name, p.annotation), f"parameter {p.name}")
        if p.name in mutated:             # each mutated argument its own alias set: a0, a1, ...
            t = t.replace("Tensor", f"Tensor(a{aliases}!)", 1)
            aliases += 1
        default = "" if p.default is inspect.Parameter.empty else f"={p.default!r}"
        parts.append(f"{t} {p.name}{default}")
    unknown = mutated - set(sig.parameters)
    if unknown:
        raise ValueError(f"infer_schema(func): mutates_args names arguments the function does not "
                         f"have: {sorted(unknown)}")
    if sig.return_annotation is inspect.Signature.empty:
        raise ValueError(f"infer_schema(func): the return needs a type annotation (got {sig})")
    ret = hints.get("return", sig.return_annotation)
    if typing.get_origin(ret) is tuple:
        out = "(" + ", ".join(_type_name(a, "the return") for a in typing.get_args(ret)) + ")"
    else:
        out = _type_name(ret, "the return")
    return f"{op_name or ''}({', '.join(parts)}) -> {out}"


class CustomOpDef:
    """A custom op: call it like its function; register_fake, register_autograd and
    register_kernel add its other implementations."""

    def __init__(self, namespace: str, name: str, fn: Callable[..., Any], mutates_args: str | Iterable[str],
                 schema: str, device_types: Iterable[str] | None) -> None:
        self._namespace, self._name = namespace, name
        self._fn = fn
        self._mutates_args = mutates_args
        self._schema = schema
        self._kernels = {}
        for dt in device_types or ():
            self._kernels[dt] = fn
        self._fake = None
        self._backward = None
        self._setup_context = None
        self.__doc__ = fn.__doc__
        self.__name__ = name

    @property
    def _qualname(self):
        return f"{self._namespace}::{self._name}"

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def register_fake(self, fn: Callable[..., Any] | None = None, /) -> Callable[..., Any]:
        """The implementation for meta tensors: it returns tensors of the results' shapes and
        dtypes (torchlite.empty_like and the like)."""
        def register(f):
            self._fake = f
            return f
        return register if fn is None else register(fn)

    def register_kernel(self, device_types: str | Iterable[str], fn: Callable[..., Any] | None = None,
                        /) -> Callable[..., Any]:
        """The implementation for inputs on the given device type(s) ('cpu', 'cuda')."""
        types = (device_types,) if isinstance(device_types, str) else tuple(device_types)

        def register(f):
            for dt in types:
                self._kernels[dt] = f
            return f
        return register if fn is None else register(fn)

    def register_autograd(self, backward: Callable[..., Any], /, *,
                          setup_context: Callable[..., Any] | None = None) -> None:
        """backward(ctx, *output_grads) -> one gradient per input (None for non-tensors);
        setup_context(ctx, inputs, output) saves what backward needs."""
        if not callable(backward):
            raise TypeError("register_autograd: backward must be callable")
        self._backward = backward
        self._setup_context = setup_context

    def _kernel(self, args, kwargs):
        from ._tensor import Tensor
        tensors = [a for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)]
        if any(t.is_meta for t in tensors):
            if self._fake is None:
                raise RuntimeError(f"{self._qualname}: there is no fake implementation for meta "
                                   f"tensors; add one with register_fake")
            return self._fake
        device = tensors[0].device.type if tensors else "cpu"
        return self._kernels.get(device, self._fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from .autograd.graph import needs_grad
        from .autograd.grad_mode import no_grad
        from ._tensor import Tensor
        kernel = self._kernel(args, kwargs)
        inputs = [a for a in args if isinstance(a, Tensor)]
        if not needs_grad(*inputs, *[v for v in kwargs.values() if isinstance(v, Tensor)]):
            return kernel(*args, **kwargs)
        if self._backward is None:
            with no_grad():
                out = kernel(*args, **kwargs)
            return _record_missing_formula(self, inputs, out)
        return _apply_with_formula(self, kernel, args, kwargs)


def _record_missing_formula(op, inputs, out):
    """Outputs in the graph with a node whose backward says no formula was registered."""
    from .autograd.graph import Node, record
    from ._tensor import Tensor

    class _NoFormula(Node):
        def backward(self, *grads):
            raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but "
                               f"no autograd formula was registered. Please use register_autograd "
                               f"to add one.")
    outs = out if isinstance(out, tuple) else (out,)
    floats = [o for o in outs if isinstance(o, Tensor) and (o.is_floating_point() or o.is_complex())]
    if floats:
        node = type(f"GeneratedBackwardFor_{op._namespace}_{op._name}_defaultBackward",
                    (_NoFormula,), {})()
        record(node, tuple(inputs), outs if isinstance(out, tuple) else out)
    return out


def _apply_with_formula(op, kernel, args, kwargs):
    """The kernel inside an autograd.Function whose backward is the registered formula."""
    from .autograd.function import Function
    from ._tensor import Tensor

    class _Generated(Function):
        @staticmethod
        def forward(ctx, *flat):
            call_args = flat[:len(args)]
            out = kernel(*call_args, **kwargs)
            if op._setup_context is not None:
                op._setup_context(ctx, tuple(call_args), out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            result = op._backward(ctx, *grads)
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"{op._qualname}: the registered backward returned "
                                   f"{len(result)} gradients for {len(args)} inputs")
            return tuple(g if isinstance(a, Tensor) else None for g, a in zip(result, args))
    _Generated.__name__ = f"GeneratedBackwardFor_{op._namespace}_{op._name}_default"
    return _Generated.apply(*args)


def custom_op(name: str, fn: Callable[..., Any] | None = None, /, *, mutates_args: str | Iterable[str],
              device_types: str | Iterable[str] | None = None, schema: str | None = None,
              tags: Any = None) -> CustomOpDef | Callable[[Callable[..., Any]], CustomOpDef]:
    """Make fn the custom op `name` ('namespace::name'): as a decorator, or called with fn.
    mutates_args: the names of the arguments fn writes ('unknown' when unsure); device_types:
    the devices fn serves (default: all); schema: PyTorch's schema string, inferred from the
    annotations when not given."""
    ns, op_name = _parse_name(name)
    if mutates_args != "unknown" and isinstance(mutates_args, str):
        raise ValueError(f"custom_op: mutates_args must be a sequence of names or 'unknown', got "
                         f"{mutates_args!r}")

    def make(f):
        inferred = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        types = (device_types,) if isinstance(device_types, str) else device_types
        op = CustomOpDef(ns, op_name, f, mutates_args, inferred, types)
        _REGISTRY[name] = op
        return op
    return make if fn is None else make(fn)


def _op(op):
    if isinstance(op, CustomOpDef):
        return op
    found = _REGISTRY.get(op) if isinstance(op, str) else getattr(op, "_custom_op", None)
    if found is None:
        raise ValueError(f"{op!r} is not a custom op made by torchlite.library.custom_op")
    return found


def register_fake(op: str | CustomOpDef | _OpPacket, func: Callable[..., Any] | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1) -> Callable[..., Any]:
    """register_fake of the custom op `op` (the op or its 'namespace::name')."""
    return _op(op).register_fake(func) if func is not None else _op(op).register_fake()


def register_autograd(op: str | CustomOpDef | _OpPacket, backward: Callable[..., Any], /, *,
                      setup_context: Callable[..., Any] | None = None,
                      lib: Any = None) -> None:
    """register_autograd of the custom op `op`."""
    _op(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op: str | CustomOpDef | _OpPacket, device_types: str | Iterable[str],
                    func: Callable[..., Any] | None = None, /, *,
                    lib: Any = None) -> Callable[..., Any]:
    """register_kernel of the custom op `op`."""
    return _op(op).register_kernel(device_types, func) if func is not None else \
        _op(op).register_kernel(device_types)


# ---- torchlite.ops: the custom ops by namespace -------------------------------------------------
class _OpPacket:
    """torchlite.ops.<namespace>.<name>: the op, callable; .default is the op too."""

    def __init__(self, op):
        self._custom_op = op
        self.default = op

    def __call__(self, *args, **kwargs):
        return self._custom_op(*args, **kwargs)

    def __repr__(self):
        return f"{self._custom_op._namespace}.{self._custom_op._name}"


class _Namespace:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        found = _REGISTRY.get(f"{self._name}::{op}")
        if found is None:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{op}'")
        return _OpPacket(found)


class _Ops:
    """torchlite.ops: ops.<namespace>.<name> reaches a custom op."""

    def __getattr__(self, namespace):
        if namespace.startswith("__"):
            raise AttributeError(namespace)
        return _Namespace(namespace)


ops = _Ops()
