"""torch._dynamo.explain: what compiling a function does -- how many graphs, where it breaks."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..compiler._compile import Compiled, recording

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["explain", "ExplainOutput"]


class ExplainOutput:
    """graphs (the captured fx Graphs), graph_count, graph_break_count, break_reasons (each
    with the construct and the line), op_count and ops_per_graph (the call nodes of each)."""

    def __init__(self, graphs: list[Any], breaks: list[str]) -> None:
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.break_reasons = breaks
        self.graph_break_count = len(breaks)
        self.ops_per_graph = [[n.target for n in g.nodes if n.op.startswith("call")]
                              for g in graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            for i, r in enumerate(self.break_reasons, 1):
                lines.append(f"  Break Reason {i}:\n    {r}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn: Callable[..., Any], *extra_args: Any,
            **extra_kwargs: Any) -> Callable[..., ExplainOutput] | ExplainOutput:
    """explain(fn)(*args, **kwargs) -> ExplainOutput of compiling fn and calling it once."""
    def run(*args, **kwargs):
        compiled = Compiled(fn)
        with recording() as events:
            compiled(*args, **kwargs)
        graphs, seen = [], set()
        for kind, what in events:
            if kind == "graph" and id(what) not in seen:
                seen.add(id(what))
                graphs.append(what.graph)
        breaks = [f"{name}: {reason}" for kind, (name, reason) in
                  ((k, w) for k, w in events if k == "break")]
        return ExplainOutput(graphs, breaks)
    if extra_args or extra_kwargs:
        return run(*extra_args, **extra_kwargs)
    return run
