"""torchlite.jit: PyTorch's torch.jit entry points over torchlite.fx graphs.

- trace(module_or_fn, example_inputs): the ops one real run executes, as a TracedModule
  (`.graph`, `.code`); sizes and branches fixed by the example, as in PyTorch.
- script(module): torchlite has no TorchScript compiler.  A module whose forward can be
  captured symbolically (torchlite.fx.symbolic_trace) is accepted as it is, its graph and
  code attached; one whose forward branches on tensor values raises RuntimeError naming the
  line.  What differs from TorchScript: Python control flow on values is not compiled.
- save(m, f) / load(f): a traced or scripted module as one file (a torchlite checkpoint of
  its graph as JSON and its weights) that loads without the model's class, running no code
  from the file (torchlite/jit/_serialization.py).
- freeze (eval-mode modules; returned as they are), ignore / unused / export (markers,
  returning the function), annotate, is_scripting (always False), is_tracing.
- fork(func, *args, **kwargs) / wait(future): as PyTorch's in eager mode, func runs at once
  (an exception it raises comes out of fork) and fork returns a completed
  torchlite.futures.Future of its result; wait gives the result."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._serialization import load, save
from ._trace import TracedModule, TracingCheckError, is_tracing, trace

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["trace", "script", "save", "load", "freeze", "ignore", "unused", "export", "annotate",
           "is_scripting", "is_tracing", "TracedModule", "TracingCheckError", "ScriptModule",
           "fork", "wait"]


class ScriptModule:
    """The type scripts check against: script() returns GraphModules, which are not
    ScriptModules (no TorchScript here); isinstance(x, torchlite.jit.ScriptModule) is False."""


def script(obj: Module | Callable[..., Any], optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Module | Callable[..., Any]:
    """A module's forward captured as a graph (see the module docstring); a plain function is
    returned as it is (it runs in Python, as TorchScript would run it)."""
    from ..nn.modules.module import Module
    if not isinstance(obj, Module):
        if callable(obj):
            return obj
        raise RuntimeError(f"script: expected a Module or a function, got {type(obj).__name__}")
    from .. import fx
    try:
        gm = fx.symbolic_trace(obj)
    except (fx.TraceError, RuntimeError, TypeError) as e:
        raise RuntimeError(f"torchlite.jit.script: {type(obj).__name__}.forward uses a construct "
                           f"that cannot be captured without a TorchScript compiler (use "
                           f"torchlite.jit.trace with example inputs, which fixes it to the "
                           f"example's path):\n{e}") from e
    gm.train(obj.training)
    return gm


def freeze(mod: Module, preserved_attrs: list[str] | None = None, optimize_numerics: bool = True) -> Module:
    """PyTorch's torch.jit.freeze wants a module in eval mode and inlines its parameters;
    here the module is returned as it is (nothing to inline in eager execution)."""
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def ignore(drop: bool | Callable[..., Any] = False, **kwargs: Any) -> Callable[..., Any]:
    """@torchlite.jit.ignore (or ignore(drop=...)): a marker; the function runs as written."""
    if callable(drop):
        drop._torchlite_jit_ignore = True
        return drop

    def mark(fn):
        fn._torchlite_jit_ignore = True
        return fn
    return mark


def unused(fn: Callable[..., Any]) -> Callable[..., Any]:
    """@torchlite.jit.unused: a marker; the function runs as written."""
    fn._torchlite_jit_unused = True
    return fn


def export(fn: Callable[..., Any]) -> Callable[..., Any]:
    """@torchlite.jit.export: a marker; the method stays a plain method."""
    fn._torchlite_jit_export = True
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """the_value (a type hint for TorchScript; nothing to do here)."""
    return the_value


def is_scripting() -> bool:
    """False: torchlite never runs code as TorchScript."""
    return False


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A Future of func(*args, **kwargs), run now (PyTorch's eager fork: only TorchScript runs
    forked code in parallel, and torchlite runs no TorchScript)."""
    from ..futures import Future
    fut = Future()
    fut.set_result(func(*args, **kwargs))
    return fut


def wait(future: Any) -> Any:
    """The result of a Future from fork (waiting for it when it is not complete)."""
    return future.wait()
