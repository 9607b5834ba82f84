"""TORCHLITE_LOGS (or PyTorch's TORCH_LOGS spelling): what torchlite.compile prints.

    TORCHLITE_LOGS=graph_code     each captured graph's Python code and its fused kernels
    TORCHLITE_LOGS=graph_breaks   each graph break, with its construct and line
    TORCHLITE_LOGS=recompiles     each compile of a callable that was compiled before
Several are joined with commas; "+all" or "all" turns on every one."""
import os
import sys

__all__ = ["enabled", "graph_code", "graph_break", "recompile"]

_KNOWN = ("graph_code", "graph_breaks", "recompiles", "output_code")


def enabled(kind):
    spec = os.environ.get("TORCHLITE_LOGS") or os.environ.get("TORCH_LOGS") or ""
    parts = {p.strip().lstrip("+") for p in spec.split(",") if p.strip()}
    return kind in parts or "all" in parts or (kind == "graph_code" and "output_code" in parts)


def _emit(text):
    print(text, file=sys.stderr)


def graph_code(name, src, kernels):
    if not enabled("graph_code"):
        return
    _emit(f"TRACED GRAPH {name}\n{src}")
    for k in kernels:
        after = getattr(k, "epilogue_of", None)
        _emit(f"FUSED KERNEL {k.__name__} ({k.program.num_instructions} instructions over "
              f"{k.shape}{f', the epilogue of a {after} product' if after else ''})\n{k.source()}")


def graph_break(name, err):
    if enabled("graph_breaks"):
        _emit(f"GRAPH BREAK in {name}: {err}")


def recompile(name, reason):
    if enabled("recompiles"):
        _emit(f"RECOMPILING {name}: {reason}")
