"""The layering of ../shared/ARCHITECTURE-REVIEW.md section 2.2, as a test: every import in
torchlite/ (module level and inside functions, read with `ast`; the Cython modules' `import`
and `cimport` lines read as text) is held against the rules below.

Layers, from the ground up:

    Kernels (_core)        CudaBackend (cuda/_*.py)
         \\                    /
          Dispatch (_dispatch.py): the only door to CudaBackend (and MetaBackend, _meta.py)
                    |
    Meta (_dtype, _device, _size, _switches, return_types)
                    |
    Tensor (_tensor, _tensor_str)  <->  Autograd core (graph, engine, function, grad_mode)
                    |
    Ops (_ops/)    NNOps (nn/functional/)
                    |
    NN, Optim, Data, AMP, Interop, CudaFace (cuda/__init__, cuda/amp), Face (the rest)

A rule that the code still breaks today is listed in KNOWN with the redesign step (issue 16)
that removes it; the test fails on any other crossing, and also when a KNOWN crossing is gone,
so that the list only shrinks."""
import ast
import os
import re

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "torchlite")

LAYERS = [  # (layer, module-name pattern); the first match wins
    ("Kernels", r"torchlite\._core(\..*)?$"),
    ("CudaBackend", r"torchlite\.cuda\._.*$"),
    ("CudaFace", r"torchlite\.cuda(\.amp)?$"),
    ("Dispatch", r"torchlite\._dispatch$"),
    ("MetaBackend", r"torchlite\._meta$"),
    ("Meta", r"torchlite\.(_dtype|_device|_size|_switches|_memory_format|_layout|_autocast_state|return_types)$"),
    ("Tensor", r"torchlite\.(_tensor|_tensor_str)$"),
    ("AutogradCore", r"torchlite\.autograd\.(graph|engine|function|grad_mode|anomaly)$"),
    ("AutogradTools", r"torchlite\.autograd(\..*)?$"),
    ("Ops", r"torchlite\._ops(\..*)?$"),
    ("NNOps", r"torchlite\.nn\.functional(\..*)?$"),
    ("NN", r"torchlite\.nn(\..*)?$"),
    ("Optim", r"torchlite\.optim(\..*)?$"),
    ("Data", r"torchlite\.utils(\..*)?$"),
    ("AMP", r"torchlite\.(amp|cpu)(\..*)?$"),
    ("Interop", r"torchlite\.(serialization|_safetensors|_dlpack)$"),
    ("Face", r"torchlite(\..*)?$"),
]

# (importer's layer, imported layer): what a layer must never import
NEVER = {
    **{("Kernels", other): "_core imports nothing of the package"
       for other, _ in LAYERS if other != "Kernels"},
    **{("Meta", other): "plain values import nothing above _core"
       for other, _ in LAYERS if other not in ("Kernels", "Meta")},
    **{(layer, "CudaBackend"): "only _dispatch opens the door to the CUDA backend"
       for layer, _ in LAYERS if layer not in ("CudaBackend", "Dispatch", "CudaFace")},
    **{(layer, "MetaBackend"): "only _dispatch opens the door to the meta device's arrays"
       for layer, _ in LAYERS if layer not in ("MetaBackend", "Dispatch")},
    **{("MetaBackend", other): "the meta device works on the CPU's array metadata only"
       for other, _ in LAYERS if other not in ("MetaBackend", "Kernels")},
    ("CudaBackend", "CudaFace"): "the backend stays below the public torchlite.cuda",
    ("CudaBackend", "Tensor"): "the backend works on arrays",
    ("CudaBackend", "Ops"): "the backend works on arrays",
    ("CudaBackend", "AutogradCore"): "the backend works on arrays",
    ("Tensor", "Ops"): "ops attach themselves to Tensor, never the reverse",
    ("AutogradCore", "Ops"): "autograd's core records and runs nodes; it calls no op",
    ("AutogradCore", "NN"): "autograd knows nothing of nn",
    ("AutogradCore", "NNOps"): "autograd knows nothing of nn",
    ("Ops", "NN"): "ops are below nn", ("Ops", "NNOps"): "ops are below nn",
    ("Ops", "Optim"): "ops are below optim",
    ("NNOps", "NN"): "nn.functional is below nn.modules",
    ("NN", "Dispatch"): "nn speaks the Tensor API", ("NN", "Kernels"): "nn speaks the Tensor API",
    ("Optim", "Dispatch"): "optim speaks the Tensor API",
    ("Optim", "Kernels"): "optim speaks the Tensor API",
}

# crossings the code still makes, each with the step of issue 16 that removes it
KNOWN = {
}


def layer_of(module):
    for layer, pattern in LAYERS:
        if re.match(pattern, module):
            return layer
    return None


def _module_name(path):
    rel = os.path.relpath(path, os.path.dirname(ROOT))[:-len(os.path.splitext(path)[1])]
    parts = rel.split(os.sep)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_module(name):
    base = os.path.join(os.path.dirname(ROOT), *name.split("."))
    return os.path.isdir(base) or any(os.path.exists(base + ext) for ext in (".py", ".pyx"))


def _imports_of_py(path, module):
    """(imported module, line) for every import statement in the file, relative ones
    resolved; `from pkg import name` counts as pkg.name when that is a module."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                full = f"{source}.{alias.name}"
                yield (full if _is_module(full) else source), node.lineno


def _imports_of_pyx(path):
    for i, line in enumerate(open(path, encoding="utf-8"), 1):
        m = re.match(r"\s*(?:from\s+([\w.]+)\s+c?import|c?import\s+([\w.]+))", line)
        if m:
            yield m.group(1) or m.group(2), i


def all_imports():
    """(importer, imported, file:line) for every import of a torchlite module."""
    found = []
    for folder, _, files in os.walk(ROOT):
        for f in sorted(files):
            path = os.path.join(folder, f)
            if f.endswith(".py"):
                module = _module_name(path)
                pairs = _imports_of_py(path, module)
            elif f.endswith((".pyx", ".pxd")):
                module = _module_name(path)
                pairs = _imports_of_pyx(path)
            else:
                continue
            for imported, line in pairs:
                if imported == "torchlite" or imported.startswith("torchlite."):
                    found.append((module, imported, f"{os.path.relpath(path, ROOT)}:{line}"))
    return found


def crossings():
    """{(importer, imported): (rule, where)} for every import a NEVER rule forbids."""
    out = {}
    for importer, imported, where in all_imports():
        rule = NEVER.get((layer_of(importer), layer_of(imported)))
        if rule is not None:
            out.setdefault((importer, imported), (rule, where))
    return out


def test_every_module_has_a_layer():
    assert not [m for m, _, _ in all_imports() if layer_of(m) is None]


def test_no_import_crosses_the_layers():
    new = {k: v for k, v in crossings().items() if k not in KNOWN}
    assert not new, "imports that break the layering:\n" + "\n".join(
        f"  {a} -> {b} ({where}): {rule}" for (a, b), (rule, where) in sorted(new.items()))


def test_the_known_crossings_are_still_there():
    # a crossing fixed by a redesign step leaves KNOWN too, so the list only shrinks
    gone = sorted(set(KNOWN) - set(crossings()))
    assert not gone, f"no longer crossing: remove from KNOWN: {gone}"


@pytest.mark.parametrize("importer, imported, expected", [
    ("torchlite._tensor", "torchlite._ops.creation", "Tensor -> Ops"),
    ("torchlite._core.array", "torchlite._tensor", "Kernels -> Tensor"),
    ("torchlite.nn.modules.linear", "torchlite._dispatch", "NN -> Dispatch"),
    ("torchlite._ops.elementwise", "torchlite.cuda._ops", "Ops -> CudaBackend"),
])
def test_the_rules_would_catch_a_crossing(importer, imported, expected):
    a, b = expected.split(" -> ")
    assert (layer_of(importer), layer_of(imported)) == (a, b)
    assert (a, b) in NEVER


def import_circles():
    """The strongly connected components (more than one module) of the import graph: module-
    and function-level imports alike, as all_imports reads them."""
    graph = {}
    for importer, imported, _ in all_imports():
        if importer != imported:
            graph.setdefault(importer, set()).add(imported)
    index, low, stack, on_stack, circles = {}, {}, [], set(), []
    for root in list(graph):            # Tarjan's algorithm, iterative (no recursion limit)
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(graph.get(nxt, ()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = set()
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        members.add(m)
                        if m == node:
                            break
                    if len(members) > 1:
                        circles.append(sorted(members))
    return circles


def test_no_import_circle_is_larger_than_two_modules():
    # two files may know each other (an op family's x.py and x_grad.py, a package and the
    # module it loads); three or more in a circle is a layer knot
    big = [c for c in import_circles() if len(c) > 2]
    assert not big, "import circles of more than two modules:\n" + "\n".join(
        f"  {len(c)}: {', '.join(c)}" for c in big)


def test_import_circles_are_found():
    # the check itself: a made-up three-module loop is one circle
    import unittest.mock as mock
    fake = [("torchlite.a", "torchlite.b", ""), ("torchlite.b", "torchlite.c", ""),
            ("torchlite.c", "torchlite.a", ""), ("torchlite.c", "torchlite.d", "")]
    with mock.patch(f"{__name__}.all_imports", return_value=fake):
        assert import_circles() == [["torchlite.a", "torchlite.b", "torchlite.c"]]
