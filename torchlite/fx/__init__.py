"""torchlite.fx: capture a model's forward as a graph, transform it, and run it as Python
(PyTorch's torch.fx).

    gm = torchlite.fx.symbolic_trace(model)     # a GraphModule: an nn.Module running the graph
    gm.graph.print_tabular()                    # the nodes: placeholder, get_attr,
                                                # call_function, call_method, call_module, output
    print(gm.code)                              # the Python it generated and runs

A graph is transformed by editing its nodes (Graph.inserting_after, create_node,
Node.replace_all_uses_with, Graph.erase_node, then gm.recompile()), or node by node with a
Transformer; Interpreter runs one node at a time, and passes.shape_prop.ShapeProp records
every node's shape and dtype.

Tracing runs forward on Proxies, so Python control flow on tensor values (if x.sum() > 0)
cannot be captured: it raises TraceError naming the line; concrete_args fixes such an input
to a value.  torchlite.nn's own layers stay whole (call_module); user modules are traced
through (Tracer.is_leaf_module decides).  Functions are recorded when called through their
module (torchlite.relu, F.relu); a function imported by name into the traced code before the
trace (from torchlite import relu) runs on the Proxy and fails, unless registered with
fx.wrap."""
from . import passes
from ._symbolic_trace import Tracer, symbolic_trace, wrap
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Proxy, TraceError

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Node", "Proxy",
           "Interpreter", "Transformer", "TraceError", "map_arg", "passes"]
