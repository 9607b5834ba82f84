"""torchlite.compile and torchlite.compiler: a graph mode that makes models faster, on the CPU
with no C compiler.

    model = torchlite.compile(model)          # or @torchlite.compile on a function,
    loss = model(x).sum(); loss.backward()    # or model.compile() in place

A call captures the model's graph (torchlite.fx's tracer, run on the real inputs), optimises
it -- dead code, constant folding, common subexpressions, activations inlined -- and fuses
each chain of elementwise ops into one kernel: a program run by an interpreter in
torchlite/_core/fused.pyx, tile by tile, so intermediates stay in cache, calling the eager
ops' own SIMD loops.  The backward of each fused kernel is derived from the ops' backward
formulas when the graph is built and runs as one more fused program.  The other ops run as
the eager ops they are.  Later calls with the same input signature (shapes, dtypes, devices,
requires_grad, grad mode, training flags) replay the compiled code; a new signature compiles
again (up to torchlite._dynamo.config.cache_size_limit).  Code that reads tensor values (an
`if` on a tensor, .item(), print) is a graph break: it runs eagerly, its submodules compiled
one by one; fullgraph=True makes a break an error instead.

mode: None/"default", "reduce-overhead" and "max-autotune" (and "max-autotune-no-cudagraphs")
all run the same pipeline on the CPU: there are no CUDA graphs to capture and no kernel
variants to tune, so they are accepted for PyTorch scripts and change nothing.
backend: "inductor" (the default: all passes and fusion), "eager" or "aot_eager" (capture
and guards only: the graph replays the eager ops, for finding graph breaks), or a callable
backend(graph_module, example_inputs) -> callable, PyTorch's custom-backend protocol.
options: {"fusion": False} turns fusion off.  {"epilogue_fusion": True} (inductor's name) runs
the elementwise ops after a matrix product (F.linear, mm, a 2-D @) on each tile of the product
as the GEMM finishes it, while the tile is in L1 (compiler/_epilogue.py).  It is off by default
because on the CPUs measured it does not pay: the GEMM is bound by arithmetic, and re-reading
its result from L2/L3 afterwards costs less than the epilogue's per-row calls (measured in
benchmarks/RESULTS.md: 0.96-1.0x on its own, 0.95x on the MLP block's training step).
{"cpp_codegen": True} (or the environment variable TORCHLITE_CPP_CODEGEN=1) compiles each fused
program, where a C compiler is found, into one C loop that keeps every intermediate in
registers (compiler/_cpp.py; cached on disk under $TORCHLITE_CACHE_DIR, default
~/.cache/torchlite); the interpreter still tiles and threads, and runs what has no C form.
Its results equal the interpreter's up to the multiply-adds the C compiler contracts."""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ._compile import Compiled, is_compiling, reset, disabled as _disabled_block
from ._config import config  # noqa: F401  (torchlite._dynamo.config)

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..nn.modules.module import Module

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling",
           "OptimizedModule", "allow_in_graph"]

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_BACKENDS = ("inductor", "eager", "aot_eager")
_OPTIONS = ("fusion", "epilogue_fusion", "cpp_codegen")
# PyTorch inductor's tuning options that scripts pass (options={"max_autotune": True}, ...):
# accepted so those scripts run, and they choose nothing here (there is no autotuner, no
# CUDA graphs, no Triton); any other unknown name is still an error, as in PyTorch
_INDUCTOR_NO_EFFECT = ("max_autotune", "max_autotune_gemm", "max_autotune_pointwise",
                       "coordinate_descent_tuning", "shape_padding", "freezing",
                       "layout_optimization", "aggressive_fusion", "benchmark_kernel",
                       "size_asserts", "debug", "cpp_wrapper", "fallback_random",
                       "triton.cudagraphs", "triton.cudagraph_trees", "trace.enabled",
                       "trace.graph_diagram", "force_same_precision", "split_reductions",
                       "permute_fusion", "reorder_for_locality")


def compile(model: Module | Callable[..., Any] | None = None, *, fullgraph: bool = False,
            dynamic: bool | None = None, mode: str | None = None, backend: str | Callable[..., Any] = "inductor",
            options: dict[str, Any] | None = None, disable: bool = False) -> Callable[..., Any]:
    """Compile a module or a function (PyTorch's torch.compile): returns an OptimizedModule
    for a module, a compiled function for a function; without `model`, a decorator."""
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                 backend=backend, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError(f"compile: expected a module or a callable, got {type(model).__name__}")
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified "
                           "at the same time.")
    if isinstance(backend, str) and backend not in _BACKENDS:
        raise RuntimeError(f"compile: unknown backend {backend!r} (torchlite has "
                           f"{', '.join(_BACKENDS)}, or pass a callable)")
    for k in options or {}:
        if k not in _OPTIONS and k not in _INDUCTOR_NO_EFFECT:
            raise RuntimeError(f"compile: unknown option {k!r} (known: {', '.join(_OPTIONS)}; "
                               f"accepted with no effect: {', '.join(_INDUCTOR_NO_EFFECT)})")
    if disable:
        return model
    from ..nn.modules.module import Module
    compiled = Compiled(model, fullgraph=fullgraph, dynamic=dynamic, mode=mode, backend=backend,
                        options=options)
    if isinstance(model, Module):
        return OptimizedModule(model, compiled)
    functools.update_wrapper(compiled, model, updated=())
    return compiled


def _optimized_module_class():
    from ..nn.modules.module import Module

    class OptimizedModule(Module):
        """What torchlite.compile returns for a module: calls run compiled; `_orig_mod` is the
        module itself (its parameters, buffers and submodules are this module's, under the
        `_orig_mod.` prefix, as in PyTorch); other attributes are read from it."""

        def __init__(self, mod: Module, compiled: Callable[..., Any]) -> None:
            super().__init__()
            self._orig_mod = mod
            object.__setattr__(self, "_compiled", compiled)
            self.training = mod.training

        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            if self._forward_pre_hooks or self._forward_hooks:     # hooks on this wrapper run
                return super().__call__(*args, **kwargs)            # around the compiled call
            return self._compiled(*args, **kwargs)

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return self._compiled(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            try:
                return super().__getattr__(name)
            except AttributeError:
                return getattr(self._modules["_orig_mod"], name)

        def __repr__(self) -> str:
            return f"OptimizedModule({self._orig_mod!r})"
    return OptimizedModule


OptimizedModule = _optimized_module_class()
OptimizedModule.__qualname__ = "OptimizedModule"      # pickled by the name it is found under
OptimizedModule.__module__ = __name__


def disable(fn: Callable[..., Any] | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Callable[..., Any]:
    """Run fn eagerly, never captured (torch.compiler.disable): inside a compiled model a call
    of fn is a graph break; with recursive=True, compiled callables it calls run eagerly too."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        if is_compiling():
            from ._capture import GraphBreak
            raise GraphBreak(f"a call of {getattr(fn, '__name__', fn)!r}, which "
                             f"torchlite.compiler.disable keeps eager"
                             + (f" ({reason})" if reason else ""))
        if not recursive:
            return fn(*args, **kwargs)
        with _disabled_block():
            return fn(*args, **kwargs)
    eager._torchlite_disabled = True
    return eager


def is_dynamo_compiling() -> bool:
    return is_compiling()


def allow_in_graph(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Accepted for PyTorch scripts: torchlite's capture already records calls of
    torchlite's functions and traces through the rest, so fn is returned as it is."""
    return fn
