"""Functions imported by name (`from torchlite import flatten`, `from torchlite.nn.functional
import relu`) are recorded by graph capture as the namespace's spellings are: fx's symbolic
trace, jit.trace, ONNX export and torchlite.compile all see them (torchlite.vision's models
are written that way)."""
import io

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite import cat, flatten
from torchlite.nn.functional import relu


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return cat([relu(y), y * 2.0], 1)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _Block()
        self.fc = nn.Linear(8 * 5 * 5, 3)

    def forward(self, x):
        return self.fc(flatten(self.block(x), 1))


def _targets(graph):
    return [getattr(n.target, "__name__", n.target) for n in graph.nodes if n.op == "call_function"]


def test_symbolic_trace_records_imported_functions():
    gm = tl.fx.symbolic_trace(_Net())
    names = _targets(gm.graph)
    assert "flatten" in names and "cat" in names and "relu" in names, names
    x = tl.randn(2, 3, 5, 5)
    m = _Net()
    gm = tl.fx.symbolic_trace(m)
    np.testing.assert_allclose(gm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    # the patches are gone after the trace: the names are the functions again
    assert flatten is tl.flatten and globals()["relu"] is tl.nn.functional.relu


def test_a_traced_function_s_own_module_names_record_too():
    def f(a, b):
        return flatten(cat([a, relu(b)], 0), 0)
    gm = tl.fx.symbolic_trace(f)
    assert {"flatten", "cat", "relu"} <= set(_targets(gm.graph))
    a, b = tl.randn(2, 3), tl.randn(1, 3)
    np.testing.assert_array_equal(gm(a, b).numpy(), f(a, b).numpy())


def test_compile_captures_one_graph_without_breaks():
    m = _Net().eval()
    x = tl.randn(2, 3, 5, 5)
    ex = tl._dynamo.explain(m)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    c = tl.compile(m)
    with tl.no_grad():
        np.testing.assert_allclose(c(x).numpy(), m(x).numpy(), rtol=1e-6, atol=1e-7)


def test_vision_resnet_compiles_and_exports():
    from torchlite.vision import models
    m = models.resnet18(num_classes=10).eval()
    x = tl.randn(2, 3, 64, 64)
    ex = tl._dynamo.explain(m)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    f = io.BytesIO()
    tl.onnx.export(m, (x,), f)
    s = ort.InferenceSession(f.getvalue())
    out = s.run(None, {s.get_inputs()[0].name: x.numpy()})[0]
    with tl.no_grad():
        np.testing.assert_allclose(out, m(x).numpy(), rtol=1e-3, atol=1e-4)


def test_a_function_held_in_a_closure_cell_records():
    act = relu                                  # a torchlite function in the enclosing scope

    def f(x):
        return act(x * 2.0) + 1.0
    gm = tl.fx.symbolic_trace(f)
    assert "relu" in _targets(gm.graph)
    x = tl.randn(3, 4)
    np.testing.assert_array_equal(gm(x).numpy(), f(x).numpy())
    ex = tl._dynamo.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert act is tl.nn.functional.relu         # the cell holds the function again


@pytest.mark.parametrize("name, kw", [("resnet18", {}), ("mobilenet_v3_small", {"width_mult": 0.25})])
def test_vision_models_train_compiled_as_eager(name, kw):
    # one graph each, training mode (batch norm's batch statistics, dropout's masks drawn as
    # eager draws them): outputs, gradients and running statistics match eager over steps
    import torchlite.nn.functional as F
    from torchlite.vision import models
    tl.manual_seed(0)
    m, m2 = getattr(models, name)(num_classes=5, **kw), getattr(models, name)(num_classes=5, **kw)
    m2.load_state_dict(m.state_dict())
    c = tl.compile(m2)
    x, y = tl.randn(4, 3, 32, 32), tl.randint(0, 5, (4,))
    for step in range(2):
        outs = []
        for mod in (m, c):
            tl.manual_seed(100 + step)
            mod.zero_grad()
            out = mod(x)
            F.cross_entropy(out, y).backward()
            outs.append(out.detach().numpy())
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5, atol=1e-6)
        for p, q in zip(m.parameters(), m2.parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)
        with tl.no_grad():
            for p, q in zip(m.parameters(), m2.parameters()):
                p.sub_(0.01 * p.grad)
                q.sub_(0.01 * q.grad)
    for a, b in zip(m.buffers(), m2.buffers()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6)
    assert tl._dynamo.explain(m)(x).graph_count == 1


def test_unpacking_a_traced_shape_and_assert_record_as_in_pytorch():
    def f(x):
        n, c = x.shape                          # unpacking: one getitem per value
        tl._assert(c == 4, "four columns")
        return x.reshape(n * c)
    gm = tl.fx.symbolic_trace(f)
    names = [getattr(n.target, "__name__", n.target) for n in gm.graph.nodes]
    assert names.count("getitem") == 2 and "_assert" in names, names
    x = tl.randn(3, 4)
    np.testing.assert_array_equal(gm(x).numpy(), f(x).numpy())
    with pytest.raises(AssertionError, match="four columns"):
        gm(tl.randn(3, 5))

    def loop(x):
        for _ in x.shape:                       # other iteration still needs a length
            pass
    with pytest.raises(tl.fx.TraceError, match="cannot be iterated"):
        tl.fx.symbolic_trace(loop)


def test_assert_takes_bools_and_one_element_tensors():
    assert tl._assert(True, "m") is None and tl._assert(tl.tensor(1), "m") is None
    with pytest.raises(AssertionError, match="^m$"):
        tl._assert(tl.tensor(False), "m")
    with pytest.raises(RuntimeError, match="ambiguous"):
        tl._assert(tl.tensor([1, 2]) > 0, "m")


def test_vision_transformer_traces_symbolically_as_torchvision_s_does():
    from torchlite.vision import models
    tl.manual_seed(0)
    m = models.VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2,
                                 hidden_dim=16, mlp_dim=32, num_classes=5).eval()
    x = tl.randn(2, 3, 32, 32)
    with tl.no_grad():
        want = m(x).numpy()
        np.testing.assert_array_equal(tl.fx.symbolic_trace(m)(x).numpy(), want)
        np.testing.assert_array_equal(tl.jit.script(m)(x).numpy(), want)
    with pytest.raises(AssertionError, match="Wrong image height"):
        m(tl.randn(1, 3, 16, 16))
