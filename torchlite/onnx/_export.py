"""The driver of torchlite.onnx.export: trace, annotate shapes, convert node by node (the
table in _symbolic.py), assemble, check, write."""
import enum

import numpy as np

from ._symbolic import DTYPES
from .errors import UnsupportedOperatorError

SUPPORTED_OPSETS = range(17, 22)


class OperatorExportTypes(enum.Enum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError as e:
        raise ImportError("torchlite.onnx.export needs the onnx package: "
                          "pip install 'torchlite-dl[onnx]'") from e
    return onnx, helper, numpy_helper


class Ctx:
    """What a converter works with: the ONNX nodes and initializers made so far, the value
    name of every graph node, and each node's example shape and dtype (ShapeProp)."""

    def __init__(self, gm, opset, export_params, dynamic_inputs):
        self.onnx, self.helper, self.numpy_helper = _onnx()
        self.gm, self.opset, self.export_params = gm, opset, export_params
        self.nodes, self.initializers, self.values = [], [], {}
        self._used = set()
        self.dynamic_inputs = dynamic_inputs      # value name -> {dim: symbolic name}
        self.weight_inputs = []                   # with export_params=False
        self.dynamic_dims = {}                    # value name -> set of dims that are symbolic

    # ---- names and constants -----------------------------------------------------------------
    def fresh(self, base):
        name, k = base, 0
        while name in self._used:
            k += 1
            name = f"{base}_{k}"
        self._used.add(name)
        return name

    def add(self, op_type, inputs, n_outputs=1, name=None, **attrs):
        """An ONNX node; returns its output name (or the list of them)."""
        outs = [self.fresh(name or op_type.lower()) for _ in range(n_outputs)]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs,
                                                name=self.fresh(f"/{op_type}"), **attrs))
        return outs[0] if n_outputs == 1 else outs

    def initializer(self, array, base):
        name = self.fresh(base)
        # asarray(order="C"), not ascontiguousarray: that makes a 0-d array 1-d
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array, order="C"), name))
        return name

    def ints(self, values, base="shape"):
        return self.initializer(np.asarray(values, dtype=np.int64), base)

    def scalar(self, value, like_dtype):
        np_dtype = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
                    "int64": np.int64, "int32": np.int32, "bool": np.bool_}.get(like_dtype,
                                                                                np.float32)
        return self.initializer(np.asarray(value, dtype=np_dtype), "const")

    def tensor(self, t, base):
        """A parameter, buffer or constant tensor of the model: an initializer, or with
        export_params=False an input of the graph (the weights fed at run time)."""
        array = t.detach().cpu().numpy()
        if self.export_params:
            return self.initializer(array, base)
        name = self.fresh(base)
        self.weight_inputs.append(self.helper.make_tensor_value_info(
            name, getattr(self.onnx.TensorProto, DTYPES[str(t.dtype).replace("torchlite.", "")]),
            list(array.shape)))
        return name

    # ---- what the graph knows about a node ----------------------------------------------------
    def value(self, a, like_dtype="float32"):
        """The ONNX value name of an argument: a node's, or a constant made for a number."""
        from ..fx.node import Node
        if isinstance(a, Node):
            return self.values[a]
        if isinstance(a, (bool, int, float)):
            return self.scalar(a, like_dtype)
        raise UnsupportedOperatorError(f"an argument of type {type(a).__name__} ({a!r}) has no "
                                       f"ONNX form here")

    def meta(self, node):
        """The node's TensorMetadata, or None (no tensor, or several)."""
        from ..fx.passes.shape_prop import TensorMetadata
        m = node.meta.get("tensor_meta")
        return m if isinstance(m, TensorMetadata) else None

    def dtype(self, node):
        m = self.meta(node)
        if m is not None:
            return str(m.dtype).replace("torchlite.", "")
        t = node.meta.get("type")
        if isinstance(t, type) and (issubclass(t, int) or issubclass(t, tuple)):
            return "int64"                  # sizes: ONNX's Shape gives int64
        return "float32"

    def shape(self, node):
        m = self.meta(node)
        return tuple(m.shape) if m is not None else None

    def dynamic(self, node):
        """The dims of a node's value that are symbolic (propagated from dynamic inputs)."""
        v = self.values.get(node)
        return self.dynamic_dims.get(v, set()) if isinstance(v, str) else set()


def _normalize(args, kwargs):
    from .._tensor import Tensor
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    return args, kwargs


def export_model(model, args, f, *, input_names, output_names, dynamic_axes, opset_version,
                 export_params, verbose, kwargs, training):
    from .. import jit
    from ..autograd.grad_mode import no_grad
    from ..fx.passes.shape_prop import ShapeProp
    from ._symbolic import convert_node
    onnx, helper, _ = _onnx()
    opset = 17 if opset_version is None else int(opset_version)
    if opset not in SUPPORTED_OPSETS:
        raise ValueError(f"torchlite.onnx.export: opset_version {opset} is not supported "
                         f"(supported: {SUPPORTED_OPSETS.start} to {SUPPORTED_OPSETS.stop - 1})")
    args, kwargs = _normalize(args, kwargs)
    from ._symbolic import MODULES
    if type(model).__module__.startswith("torchlite.nn") and type(model).__name__ in MODULES:
        model = _Root(model)      # a layer exported alone: one call_module node, converted whole
    was_training = getattr(model, "training", None)
    if was_training is not None and training == TrainingMode.EVAL:
        model.eval()
    try:
        with no_grad():
            gm = jit.trace(model, args or None, check_trace=False,
                           example_kwarg_inputs=kwargs or None, _symbolic_sizes=True)
            flat_inputs = list(args) + list((kwargs or {}).values())
            ShapeProp(gm).propagate(*flat_inputs)
            proto = _build(onnx, helper, gm, model, opset, export_params, input_names,
                           output_names, dynamic_axes, convert_node)
    finally:
        if was_training is not None:
            model.train(was_training)
    onnx.checker.check_model(proto)
    if verbose:
        print(helper.printable_graph(proto.graph))
    if f is not None:
        if hasattr(f, "write"):
            f.write(proto.SerializeToString())
        else:
            onnx.save(proto, f)
    return proto


def _build(onnx, helper, gm, model, opset, export_params, input_names, output_names,
           dynamic_axes, convert_node):
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    input_names = list(input_names or [])
    dyn = _dynamic_axes(dynamic_axes)
    ctx = Ctx(gm, opset, export_params, dyn)
    graph_inputs = []
    for i, n in enumerate(placeholders):
        name = input_names[i] if i < len(input_names) else n.name
        ctx._used.add(name)
        ctx.values[n] = name
        m = ctx.meta(n)
        if m is None:
            raise UnsupportedOperatorError(f"input {name!r} is not a tensor: ONNX inputs are "
                                           f"tensors")
        dims = [dyn.get(name, {}).get(d, s) for d, s in enumerate(m.shape)]
        ctx.dynamic_dims[name] = set(dyn.get(name, {}))
        graph_inputs.append(helper.make_tensor_value_info(
            name, getattr(onnx.TensorProto, DTYPES[ctx.dtype(n)]), dims))

    out_node = None
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out_node = n
            break
        convert_node(ctx, n)

    outs = _flatten_outputs(out_node.args[0])
    output_names = list(output_names or [])
    graph_outputs = []
    for i, o in enumerate(outs):
        src = ctx.values[o]
        name = output_names[i] if i < len(output_names) else src
        if name != src:
            ctx._used.add(name)
            ctx.nodes.append(helper.make_node("Identity", [src], [name],
                                              name=ctx.fresh("/output")))
        m = ctx.meta(o)
        # a dim the dynamic inputs make symbolic is symbolic in the output too, named by
        # dynamic_axes where it names it
        symbolic = ctx.dynamic_dims.get(src, set()) if isinstance(src, str) else set()
        dims = [dyn.get(name, {}).get(d, f"{name}_dim{d}" if d in symbolic else s)
                for d, s in enumerate(m.shape)] if m else None
        graph_outputs.append(helper.make_tensor_value_info(
            name, getattr(onnx.TensorProto, DTYPES[ctx.dtype(o)]), dims))
    graph = helper.make_graph(ctx.nodes, type(model).__name__ if hasattr(model, "forward")
                              else "graph", graph_inputs + ctx.weight_inputs, graph_outputs,
                              ctx.initializers)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="torchlite")
    proto.ir_version = min(proto.ir_version, 9)
    return proto


def _root_class():
    from ..nn.modules.module import Module

    class _RootOf(Module):
        def __init__(self, layer):
            super().__init__()
            self.layer = layer
            self.training = layer.training

        def forward(self, *inputs):
            return self.layer(*inputs)
    return _RootOf


def _Root(layer):
    return _root_class()(layer)


def _flatten_outputs(a):
    from ..fx.node import Node
    if isinstance(a, Node):
        return [a]
    if isinstance(a, (tuple, list)):
        return [o for e in a for o in _flatten_outputs(e)]
    if isinstance(a, dict):
        return [o for e in a.values() for o in _flatten_outputs(e)]
    raise UnsupportedOperatorError(f"the model returns a {type(a).__name__}: ONNX outputs are "
                                   f"tensors")


def _dynamic_axes(spec):
    """{name: {dim: symbolic name}} from PyTorch's forms ({name: [dims]} or {name: {dim:
    label}})."""
    out = {}
    for name, dims in (spec or {}).items():
        if isinstance(dims, dict):
            out[name] = {int(d): str(label) for d, label in dims.items()}
        else:
            out[name] = {int(d): f"{name}_dynamic_axes_{k + 1}" for k, d in enumerate(dims)}
    return out
