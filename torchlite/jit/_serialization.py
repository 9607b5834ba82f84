"""torchlite.jit.save / load: a traced or scripted module as one file that loads without the
model's Python class and runs no code from the file.

The file is a torchlite checkpoint (PyTorch's zip format, torchlite.save) of a dict:
    {"torchlite.jit": 1, "graph": <JSON text>, "tensors": {path: tensor}}
and is read back with torchlite.load(weights_only=True), which builds only tensors and plain
containers.  The JSON is data: each node's op, name, target and arguments, where a function is
named by its public path (torchlite.*, torchlite.nn.functional.*, operator.*, getattr), a
method by a Tensor method's name, and a layer (a call_module node) by a torchlite.nn class
name with its plain attributes (numbers, strings, tuples, dtypes, functions by public name)
and its parameters and buffers.  Loading accepts only those names: anything else in the file
raises RuntimeError saying what."""
from __future__ import annotations

import json
import math
import operator
import os

from .._tensor import Tensor

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from ..nn.modules.module import Module

FORMAT = 1
_FUNCTION_NAMESPACES = ("torchlite", "torchlite.nn.functional", "torchlite.linalg",
                        "torchlite.special")


class _Error(RuntimeError):
    pass


def _bad(what):
    return RuntimeError(f"torchlite.jit.load: not a valid torchlite.jit file: {what}")


# ---- values ---------------------------------------------------------------------------------
def _encode(a, node_names, refs=None):
    """A JSON form of an argument or attribute (refs: id(tensor) -> name, for a module's own
    tensors held in plain attributes)."""
    from .. import dtype as _dtype, device as _device
    from ..fx.node import Node, public_name
    if isinstance(a, Node):
        return {"node": a.name}
    if a is None or isinstance(a, (bool, str)):
        return a
    if isinstance(a, int):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, tuple):
        return {"tuple": [_encode(e, node_names, refs) for e in a]}
    if isinstance(a, list):
        return {"list": [_encode(e, node_names, refs) for e in a]}
    if isinstance(a, dict):
        if not all(isinstance(k, str) for k in a):
            raise _Error("a dict with non-string keys")
        return {"dict": {k: _encode(v, node_names, refs) for k, v in a.items()}}
    if isinstance(a, slice):
        return {"slice": [_encode(x, node_names, refs) for x in (a.start, a.stop, a.step)]}
    if isinstance(a, _dtype):
        return {"dtype": str(a).replace("torchlite.", "")}
    if isinstance(a, _device):
        return {"device": str(a)}
    if isinstance(a, Tensor) and refs is not None and id(a) in refs:
        return {"tensor_ref": refs[id(a)]}
    if callable(a):
        name = public_name(a)
        if name is None or not _allowed_function(name):
            raise _Error(f"the function {a!r} has no public torchlite name")
        return {"function": name}
    raise _Error(f"a value of type {type(a).__name__}")


def _decode(a, nodes, tensors=None):
    from .. import device as _device
    import torchlite
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, dict) and len(a) == 1:
        (kind, v), = a.items()
        if kind == "node":
            if v not in nodes:
                raise _bad(f"a node refers to an unknown node {v!r}")
            return nodes[v]
        if kind == "tuple":
            return tuple(_decode(e, nodes, tensors) for e in v)
        if kind == "list":
            return [_decode(e, nodes, tensors) for e in v]
        if kind == "dict":
            return {str(k): _decode(e, nodes, tensors) for k, e in v.items()}
        if kind == "slice":
            return slice(*[_decode(e, nodes, tensors) for e in v])
        if kind == "float" and v in ("inf", "-inf", "nan"):
            return float(v)
        if kind == "ellipsis":
            return Ellipsis
        if kind == "dtype":
            dt = getattr(torchlite, str(v), None)
            if not isinstance(dt, torchlite.dtype):
                raise _bad(f"unknown dtype {v!r}")
            return dt
        if kind == "device":
            return _device(str(v))
        if kind == "function":
            return _function(v)
        if kind == "tensor_ref" and tensors is not None:
            if v not in tensors:
                raise _bad(f"unknown tensor {v!r}")
            return tensors[v]
    raise _bad(f"an unknown value {a!r:.80}")


def _allowed_function(name):
    if name in ("getattr",):
        return True
    if name.startswith("operator."):
        return True
    return name.rpartition(".")[0] in _FUNCTION_NAMESPACES


def _function(name):
    import builtins
    import importlib
    if not isinstance(name, str) or not _allowed_function(name):
        raise _bad(f"the function {name!r} is not one torchlite files may name")
    if name == "getattr":
        return builtins.getattr
    module, _, attr = name.rpartition(".")
    if module == "operator":
        fn = getattr(operator, attr, None)
    else:
        fn = getattr(importlib.import_module(module), attr, None)
    if fn is None or not callable(fn) or isinstance(fn, type):
        raise _bad(f"no function {name!r}")
    return fn


# ---- modules --------------------------------------------------------------------------------
_SKIP_ATTRS = {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set",
               "training", "_forward_hooks", "_forward_pre_hooks", "_backward_hooks",
               "_backward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks", "_state_dict_pre_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks_with_kwargs", "_is_full_backward_hook"}


def _layer_class(qualified):
    """The torchlite.nn layer class named `module.Class` (a file may name no other)."""
    import importlib
    import re
    from ..nn.modules.module import Module
    module, _, name = str(qualified).rpartition(".")
    if not re.fullmatch(r"torchlite\.nn(\.[A-Za-z_][A-Za-z0-9_]*)*", module) \
            or not name.isidentifier():
        return None
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None
    return cls if isinstance(cls, type) and issubclass(cls, Module) else None


def _encode_module(mod, path, tensors):
    cls = type(mod)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if _layer_class(name) is not cls:
        raise _Error(f"the layer at {path!r} is a {name}, not one of torchlite.nn's (a "
                     f"torchlite.fx Tracer whose is_leaf_module says False traces through it)")
    refs = {}
    params, buffers = {}, {}
    for k, p in mod._parameters.items():
        if p is not None:
            key = f"{path}.{k}"
            tensors[key] = p
            params[k] = {"key": key, "requires_grad": bool(p.requires_grad)}
            refs[id(p)] = k
        else:
            params[k] = None
    for k, b in mod._buffers.items():
        if b is not None:
            key = f"{path}.{k}"
            tensors[key] = b
            buffers[k] = {"key": key, "persistent": k not in mod._non_persistent_buffers_set}
            refs[id(b)] = k
        else:
            buffers[k] = None
    attrs = {}
    for k, v in vars(mod).items():
        if k in _SKIP_ATTRS:
            continue
        try:
            attrs[k] = _encode(v, None, refs)
        except _Error as e:
            raise _Error(f"attribute {k!r} of the layer at {path!r}: {e}") from None
    children = {k: (_encode_module(c, f"{path}.{k}", tensors) if c is not None else None)
                for k, c in mod._modules.items()}
    return {"class": name, "training": bool(mod.training), "attrs": attrs, "params": params,
            "buffers": buffers, "children": children}


def _decode_module(desc, tensors):
    from ..nn.parameter import Parameter
    from ..nn.modules.module import Module
    if not isinstance(desc, dict) or "class" not in desc:
        raise _bad("a layer without a class")
    cls = _layer_class(desc["class"])
    if cls is None:
        raise _bad(f"{desc['class']!r} is not a torchlite.nn layer")
    mod = cls.__new__(cls)
    Module.__init__(mod)
    own = {}
    for k, p in (desc.get("params") or {}).items():
        if p is None:
            mod.register_parameter(k, None)
            continue
        t = _tensor(tensors, p["key"])
        param = Parameter(t, requires_grad=bool(p.get("requires_grad", True)))
        mod.register_parameter(k, param)
        own[k] = param
    for k, b in (desc.get("buffers") or {}).items():
        if b is None:
            mod.register_buffer(k, None)
            continue
        t = _tensor(tensors, b["key"])
        mod.register_buffer(k, t, persistent=bool(b.get("persistent", True)))
        own[k] = t
    for k, v in (desc.get("attrs") or {}).items():
        if not isinstance(k, str) or k in _SKIP_ATTRS:
            raise _bad(f"attribute {k!r}")
        object.__setattr__(mod, k, _decode(v, {}, own))
    for k, c in (desc.get("children") or {}).items():
        mod._modules[k] = _decode_module(c, tensors) if c is not None else None
    mod.train(bool(desc.get("training", False)))
    return mod


def _tensor(tensors, key):
    t = tensors.get(key)
    if not isinstance(t, Tensor):
        raise _bad(f"missing tensor {key!r}")
    return t


# ---- save / load ----------------------------------------------------------------------------
def save(m: Module, f: str | os.PathLike[str] | BinaryIO, _extra_files: dict[str, Any] | None = None) -> None:
    """Write a module from torchlite.jit.trace / script (or any torchlite.fx GraphModule) to
    a path or a binary file: its graph and its weights, loadable by torchlite.jit.load in a
    program that does not have the model's class.  _extra_files: {name: str or bytes} saved
    beside them (jit.load fills a dict with the same names with their bytes)."""
    from .. import serialization
    from ..fx.graph_module import GraphModule
    from ..nn.parameter import Parameter
    if not isinstance(m, GraphModule):
        raise TypeError(f"torchlite.jit.save expects the module torchlite.jit.trace or script "
                        f"returned (a GraphModule), got {type(m).__name__}")
    nodes, tensors, layers = [], {}, {}
    try:
        for n in m.graph.nodes:
            entry = {"op": n.op, "name": n.name, "args": _encode(n.args, None),
                     "kwargs": _encode(n.kwargs, None)}
            if n.op == "call_function":
                entry["target"] = _encode(n.target, None)["function"]
            else:
                entry["target"] = n.target
            if n.op == "call_module" and n.target not in layers:
                layers[n.target] = _encode_module(m.get_submodule(n.target), n.target, tensors)
            if n.op == "get_attr":
                obj = m
                for part in n.target.split("."):
                    obj = getattr(obj, part)
                if not isinstance(obj, Tensor):
                    raise _Error(f"get_attr {n.target!r} is not a tensor")
                tensors[n.target] = obj
                entry["parameter"] = isinstance(obj, Parameter)
                entry["requires_grad"] = bool(obj.requires_grad)
            nodes.append(entry)
    except _Error as e:
        raise RuntimeError(f"torchlite.jit.save: cannot save this module: {e}") from None
    desc = {"format": FORMAT, "class_name": type(m).__name__, "training": bool(m.training),
            "nodes": nodes, "layers": layers}
    extra = {}
    for name, value in (_extra_files or {}).items():
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"torchlite.jit.save: _extra_files[{name!r}] must be str or bytes, "
                            f"got {type(value).__name__}")
        extra[str(name)] = value.encode() if isinstance(value, str) else bytes(value)
    serialization.save({"torchlite.jit": FORMAT, "graph": json.dumps(desc),
                        "tensors": tensors, "extra_files": extra}, f)


def load(f: str | os.PathLike[str] | BinaryIO, map_location: Any = None,
         _extra_files: dict[str, Any] | None = None) -> Module:
    """The module torchlite.jit.save wrote, rebuilt from its graph and weights (a GraphModule
    with .graph and .code).  No code from the file runs: see the module docstring."""
    from .. import serialization
    from ..fx.graph import Graph
    from ..fx.graph_module import GraphModule
    from ..nn.parameter import Parameter
    try:
        blob = serialization.load(f, map_location=map_location, weights_only=True)
    except Exception as e:
        raise RuntimeError(f"torchlite.jit.load: cannot read the file: {e}") from e
    if not isinstance(blob, dict) or blob.get("torchlite.jit") != FORMAT \
            or not isinstance(blob.get("graph"), str) or not isinstance(blob.get("tensors"), dict):
        raise _bad("it is not a file torchlite.jit.save wrote")
    try:
        desc = json.loads(blob["graph"])
    except ValueError as e:
        raise _bad(f"the graph is not JSON ({e})") from None
    if not isinstance(desc, dict) or desc.get("format") != FORMAT \
            or not isinstance(desc.get("nodes"), list):
        raise _bad("an unknown graph format")
    tensors = blob["tensors"]
    if _extra_files is not None:       # PyTorch's protocol: the caller's dict names the files
        stored = blob.get("extra_files") or {}
        for name in list(_extra_files):
            if name in stored:
                _extra_files[name] = stored[name]
    graph = Graph()
    nodes = {}
    root = {}
    try:
        for entry in desc["nodes"]:
            op, name, target = entry.get("op"), entry.get("name"), entry.get("target")
            args = _decode(entry.get("args", {"tuple": []}), nodes)
            kwargs = _decode(entry.get("kwargs", {"dict": {}}), nodes)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict):
                raise _bad(f"the arguments of node {name!r}")
            if op == "call_function":
                target = _function(target)
            elif op == "call_method":
                if not isinstance(target, str) or not hasattr(Tensor, target) or \
                        (target.startswith("_") and not (target.startswith("__")
                                                         and target.endswith("__"))):
                    raise _bad(f"{target!r} is not a Tensor method")
            elif op == "call_module":
                layer = (desc.get("layers") or {}).get(target)
                if layer is None:
                    raise _bad(f"no layer {target!r}")
                if target not in root:
                    root[target] = _decode_module(layer, tensors)
            elif op == "get_attr":
                t = _tensor(tensors, target)
                if entry.get("parameter"):
                    t = Parameter(t, requires_grad=bool(entry.get("requires_grad", True)))
                root[target] = t
            elif op not in ("placeholder", "output"):
                raise _bad(f"a node of kind {op!r}")
            if not isinstance(target, str) and op != "call_function":
                raise _bad(f"the target of node {name!r}")
            nodes[name] = graph.create_node(op, target, args, kwargs, name=name)
        graph.lint()
        gm = GraphModule(_tree(root), graph, str(desc.get("class_name", "GraphModule")))
    except RuntimeError as e:
        if str(e).startswith("torchlite.jit.load"):
            raise
        raise _bad(str(e)) from None
    gm.train(bool(desc.get("training", False)))
    return gm


def _tree(root):
    """{dotted path: object} -> a Module tree holding each object at its path."""
    from ..nn.modules.module import Module
    top = Module()
    for path in sorted(root, key=lambda p: p.count(".")):
        *parents, last = path.split(".")
        mod = top
        for p in parents:
            child = mod._modules.get(p)
            if child is None:
                child = Module()
                mod._modules[p] = child
            mod = child
        value = root[path]
        if isinstance(value, Module):
            mod._modules[last] = value
        elif type(value).__name__ == "Parameter":
            mod.register_parameter(last, value)
        else:
            mod.register_buffer(last, value)
    return top
