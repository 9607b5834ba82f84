"""The torch._dynamo names real scripts touch, for torchlite.compile (see torchlite.compiler):
config (cache_size_limit, suppress_errors, ...), reset(), explain(fn)(*args), disable,
mark_dynamic / mark_static, OptimizedModule, is_compiling, exc.Unsupported."""
from ..compiler import reset, disable, is_compiling, OptimizedModule, allow_in_graph
from ..compiler._config import config
from . import exc
from ._explain import explain, ExplainOutput

__all__ = ["config", "reset", "explain", "ExplainOutput", "disable", "is_compiling",
           "OptimizedModule", "allow_in_graph", "mark_dynamic", "mark_static", "exc", "optimize"]


def mark_dynamic(t, index, min=None, max=None):
    """Mark a dimension of t as dynamic.  torchlite's compiled graphs are specialised on
    shapes, so this is recorded (t._dynamo_dynamic_indices, as PyTorch) and a new size still
    compiles again."""
    dims = set(getattr(t, "_dynamo_dynamic_indices", set()))
    dims |= set(index if isinstance(index, (list, tuple)) else [index])
    object.__setattr__(t, "_dynamo_dynamic_indices", dims)


def mark_static(t, index=None):
    """Mark a dimension static (the default in torchlite: every shape is a guard)."""
    return t


def optimize(backend="inductor", *, nopython=False, **kwargs):
    """The older spelling of torch.compile: a decorator (nopython=True is fullgraph=True)."""
    from ..compiler import compile
    return lambda fn: compile(fn, backend=backend, fullgraph=nopython)
