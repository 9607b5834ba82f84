"""The torch._dynamo names real scripts touch, for torchlite.compile (see torchlite.compiler):
config (cache_size_limit, suppress_errors, ...), reset(), explain(fn)(*args), disable,
mark_dynamic / mark_static, OptimizedModule, is_compiling, exc.Unsupported."""
from __future__ import annotations

from ..compiler import reset, disable, is_compiling, OptimizedModule, allow_in_graph
from ..compiler._config import config
from . import exc
from ._explain import explain, ExplainOutput
import weakref as _weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .._tensor import Tensor

_dynamic_dims = {}      # id(tensor) -> (weak reference, dims given to mark_dynamic)

__all__ = ["config", "reset", "explain", "ExplainOutput", "disable", "is_compiling",
           "OptimizedModule", "allow_in_graph", "mark_dynamic", "mark_static", "exc", "optimize"]


def mark_dynamic(t: Tensor, index: int | list[int] | tuple[int, ...], min: int | None = None,
                 max: int | None = None) -> None:
    """Mark dimension(s) `index` of t as dynamic: a compiled callable given t captures its
    graph with symbolic sizes (as dynamic=True), so other sizes reuse it."""
    key = id(t)
    dims = marked_dynamic(t) | set(index if isinstance(index, (list, tuple)) else [index])
    _dynamic_dims[key] = (_weakref.ref(t, lambda _, key=key: _dynamic_dims.pop(key, None)), dims)


def marked_dynamic(t: Tensor) -> set[int]:
    """The dims of t given to mark_dynamic (empty for none)."""
    entry = _dynamic_dims.get(id(t))
    return set(entry[1]) if entry is not None and entry[0]() is t else set()


def mark_static(t: Tensor, index: int | list[int] | tuple[int, ...] | None = None) -> Tensor:
    """Mark a dimension static (the default in torchlite: every shape is a guard)."""
    return t


def optimize(backend: str | Callable[..., Any] = "inductor", *, nopython: bool = False,
             **kwargs: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The older spelling of torch.compile: a decorator (nopython=True is fullgraph=True)."""
    from ..compiler import compile
    return lambda fn: compile(fn, backend=backend, fullgraph=nopython)
