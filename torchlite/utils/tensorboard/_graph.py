"""add_graph's records: the model captured by torchlite.jit.trace (or, without example inputs, by
torchlite.fx.symbolic_trace) as a GraphDef with one NodeDef per graph node, for TensorBoard's
graph tab.  Nodes are scoped as PyTorch scopes them: `Model/Class[attribute]/.../node`, inputs
under `input/` and outputs under `output/` (op 'IO Node'); each NodeDef lists the nodes it
reads and, when example inputs were given, the shapes of what it produced (_output_shapes)."""
from ._tb import attr_value_pb2, config_pb2, graph_pb2, node_def_pb2, step_stats_pb2, tensor_shape_pb2, versions_pb2

__all__ = ["graph"]


def _capture(model, inputs, strict):
    import torchlite
    from torchlite import fx
    from torchlite.fx.passes.shape_prop import ShapeProp
    modules = list(model.modules()) if isinstance(model, torchlite.nn.Module) else []
    modes = [m.training for m in modules]
    for m in modules:                   # traced in eval mode (dropout off), as PyTorch does
        m.training = False
    try:
        if inputs is None:
            return fx.symbolic_trace(model)
        inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
        gm = torchlite.jit.trace(model, inputs, strict=strict)
        with torchlite.no_grad():
            ShapeProp(gm).propagate(*inputs)
        return gm
    finally:
        for m, mode in zip(modules, modes):
            m.training = mode


def _scope(model, root, path):
    parts = [root]
    atoms = path.split(".") if path else []
    for i, atom in enumerate(atoms):
        try:
            parts.append(f"{type(model.get_submodule('.'.join(atoms[:i + 1]))).__name__}[{atom}]")
        except (AttributeError, TypeError):
            parts.append(atom)
    return "/".join(parts)


def _shapes(meta):
    from torchlite.fx.passes.shape_prop import TensorMetadata
    if isinstance(meta, TensorMetadata):
        dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in meta.shape]
        return [tensor_shape_pb2.TensorShapeProto(dim=dims)]
    if isinstance(meta, (tuple, list)):
        return [shape for m in meta for shape in _shapes(m)]
    if isinstance(meta, dict):
        return [shape for m in meta.values() for shape in _shapes(m)]
    return []


def _node_def(name, op, inputs, meta, info):
    attr = {"attr": attr_value_pb2.AttrValue(s=info.encode("utf-8"))}
    shapes = _shapes(meta)
    if shapes:
        attr["_output_shapes"] = attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(shape=shapes))
    return node_def_pb2.NodeDef(name=name, op=op, input=inputs, attr=attr)


def _op(node, model):
    if node.op == "get_attr":
        return "prim::GetAttr"
    if node.op == "call_module":
        return type(model.get_submodule(node.target)).__name__
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return getattr(node.target, "__name__", str(node.target))


def graph(model, input_to_model=None, verbose=False, use_strict_trace=True):
    """(GraphDef, RunMetadata) of model run on input_to_model (a tensor or a tuple of them);
    verbose: print the captured graph."""
    from torchlite.fx.node import Node, map_aggregate
    gm = _capture(model, input_to_model, use_strict_trace)
    if verbose:
        print(gm.graph)
    owner = model if hasattr(model, "get_submodule") else gm
    root = type(model).__name__ if hasattr(model, "forward") else getattr(model, "__name__", "Function")
    names, nodes = {}, []
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op == "output":
            results = []
            map_aggregate(node.args[0], lambda a: results.append(a) if isinstance(a, Node) else a)
            for i, src in enumerate(results, 1):
                nodes.append(_node_def(f"output/output.{i}", "IO Node", [names[src]],
                                       src.meta.get("tensor_meta"), f"output {i} of {root}"))
            continue
        if node.op == "placeholder":
            names[node] = f"input/{node.name}"
            nodes.append(_node_def(names[node], "IO Node", [], meta, f"input {node.target!r} of {root}"))
            continue
        if node.op == "call_module":
            path = node.target
        elif node.op == "get_attr":
            path = node.target.rpartition(".")[0]
        else:
            path = node.meta.get("module_path", "")
        names[node] = f"{_scope(owner, root, path)}/{node.name}"
        info = node.format_node()
        if node.op == "call_module":
            info += f"\n{owner.get_submodule(node.target)!r}"
        nodes.append(_node_def(names[node], _op(node, owner), [names[a] for a in node.all_input_nodes], meta, info))
    stats = step_stats_pb2.StepStats(dev_stats=[step_stats_pb2.DeviceStepStats(device="/device:CPU:0")])
    return (graph_pb2.GraphDef(node=nodes, versions=versions_pb2.VersionDef(producer=22)),
            config_pb2.RunMetadata(step_stats=stats))
