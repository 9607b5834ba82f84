"""torchlite.fx: symbolic tracing, the graph and its code, editing, Interpreter/Transformer,
ShapeProp.  The oracle is the eager module itself (outputs and gradients of the traced module
must equal it) and, where PyTorch is installed, torch.fx's graph of the same model."""
import operator

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite import fx
from torchlite.fx.passes.shape_prop import ShapeProp


def scaled_relu(x, k):
    return F.relu(x) * k


fx.wrap("scaled_relu")


@fx.wrap            # the decorator form PyTorch documents
def clamp_len(x):
    return x.clamp(max=len(x))


def make_block(lib):
    """The same model class in torchlite or in PyTorch."""
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(4, 8)
            self.fc2 = lib.nn.Linear(8, 3)
            self.scale = lib.nn.Parameter(lib.ones(3) * 0.5)
            self.body = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Linear(8, 8))

        def forward(self, x):
            h = lib.nn.functional.relu(self.fc1(x))
            h = self.body(h) + 1
            out = self.fc2(h) * self.scale
            return lib.softmax(out, dim=-1), out.sum(dim=1).tanh()[1:3]
    return Block


Block = make_block(tl)


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_traced_module_runs_like_the_module_and_shows_its_graph():
    m = Block()
    gm = fx.symbolic_trace(m)
    assert isinstance(gm, fx.GraphModule) and isinstance(gm, nn.Module)
    x = tl.randn(5, 4)
    for a, b in zip(m(x), gm(x)):
        _same(a, b)
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in gm.graph.nodes]
    assert ops == [("placeholder", "x"), ("call_module", "fc1"), ("call_function", "relu"),
                   ("call_module", "body.0"), ("call_module", "body.1"),
                   ("call_function", "add"), ("call_module", "fc2"), ("get_attr", "scale"),
                   ("call_function", "mul"), ("call_function", "softmax"),
                   ("call_method", "sum"), ("call_method", "tanh"),
                   ("call_function", "getitem"), ("output", "output")]
    assert gm.graph.lint()
    code = gm.code
    assert code.startswith("def forward(self, x):") and "self.fc1(x)" in code
    assert "torchlite.nn.functional.relu(" in code and "getattr(self.body, '0')" in code
    mul = next(n for n in gm.graph.nodes if n.target is operator.mul)
    assert [u.name for u in mul.users] == ["softmax", "sum_1"]
    assert mul.all_input_nodes[1].op == "get_attr"
    # parameters, state_dict and training work as the original's
    assert sorted(gm.state_dict()) == sorted(m.state_dict())
    assert gm.fc1.weight is m.fc1.weight


def test_print_tabular_lists_every_node(capsys):
    gm = fx.symbolic_trace(Block())
    gm.graph.print_tabular()
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert len(out) == 2 + len(gm.graph.nodes)
    assert any("torchlite.nn.functional.relu" in line for line in out)
    assert "call_module" in str(gm.graph) and "%fc1" in str(gm.graph)


def test_gradients_and_training_through_a_traced_module():
    tl.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    gm = fx.symbolic_trace(m)
    x, y = tl.randn(6, 3), tl.randn(6, 2)
    F.mse_loss(m(x), y).backward()
    want = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    F.mse_loss(gm(x), y).backward()
    for w, p in zip(want, gm.parameters()):
        _same(w, p.grad)
    opt = tl.optim.SGD(gm.parameters(), lr=0.1)
    before = F.mse_loss(gm(x), y).item()
    for _ in range(20):
        opt.zero_grad()
        F.mse_loss(gm(x), y).backward()
        opt.step()
    assert F.mse_loss(gm(x), y).item() < before
    _same(m(x), gm(x))                      # the same parameters: m trained too


def test_functions_concrete_args_and_defaults():
    def f(x, scale, flip=False):
        y = x * scale
        return -y if flip else y
    gm = fx.symbolic_trace(f, concrete_args={"flip": True})
    x = tl.tensor([1.0, -2.0])
    _same(gm(x, 3.0), tl.tensor([-3.0, 6.0]))
    assert "flip = True" in gm.code


def test_data_dependent_control_flow_raises_trace_error_naming_the_line():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:               # the line the error names
                return x
            return -x
    with pytest.raises(fx.TraceError, match="control flow") as e:
        fx.symbolic_trace(Branchy())
    assert "if x.sum() > 0:" in str(e.value) and "test_fx.py" in str(e.value)
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(lambda x: [v for v in x])
    with pytest.raises(RuntimeError, match="len"):
        fx.symbolic_trace(lambda x: x * len(x))


def test_wrap_records_a_call_instead_of_tracing_into_it():
    gm = fx.symbolic_trace(lambda x: scaled_relu(x, 2.0) + 1)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0].target is scaled_relu and calls[0].args[1] == 2.0
    _same(gm(tl.tensor([-1.0, 3.0])), tl.tensor([1.0, 7.0]))
    assert scaled_relu(tl.tensor([1.0]), 3.0).item() == 3.0      # put back after the trace


def test_wrap_as_a_decorator():
    gm = fx.symbolic_trace(lambda x: clamp_len(x) + 1)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert calls[0].target is clamp_len
    _same(gm(tl.tensor([1.0, 5.0])), tl.tensor([2.0, 3.0]))


def test_editing_the_graph_and_recompiling():
    gm = fx.symbolic_trace(lambda x: tl.relu(x) + x.shape[0])
    relu = next(n for n in gm.graph.nodes if n.target is tl.relu)
    with gm.graph.inserting_after(relu):
        sig = gm.graph.call_function(tl.sigmoid, (relu.args[0],))
    relu.replace_all_uses_with(sig)
    gm.graph.erase_node(relu)
    gm.recompile()
    assert "torchlite.sigmoid(x)" in gm.code and "relu" not in gm.code
    _same(gm(tl.zeros(4)), tl.full((4,), 4.5))
    # an unused node goes with eliminate_dead_code; the graph checks its own order
    with gm.graph.inserting_before(sig):
        gm.graph.call_function(tl.exp, (sig.args[0],))
    assert gm.graph.eliminate_dead_code()
    assert not any(n.target is tl.exp for n in gm.graph.nodes)
    with pytest.raises(RuntimeError, match="still had 2 users"):
        gm.graph.erase_node(next(iter(gm.graph.nodes)))
    later = gm.graph.call_function(tl.neg, (sig,))
    sig.update_arg(0, later)                   # uses a node defined after it
    with pytest.raises(RuntimeError, match="used before it has been defined"):
        gm.graph.lint()


def test_interpreter_and_transformer():
    m = Block()
    gm = fx.symbolic_trace(m)
    x = tl.randn(3, 4)
    for a, b in zip(fx.Interpreter(gm).run(x), m(x)):
        _same(a, b)

    class AddToSub(fx.Transformer):
        def call_function(self, target, args, kwargs):
            return super().call_function(operator.sub if target is operator.add else target,
                                         args, kwargs)
    new = AddToSub(gm).transform()
    assert isinstance(new, fx.GraphModule) and "+" not in new.code and " - 1" in new.code
    h = m.body(F.relu(m.fc1(x))) - 1
    _same(new(x)[0], tl.softmax(m.fc2(h) * m.scale, dim=-1))

    class Negate(fx.Interpreter):
        def call_module(self, target, args, kwargs):
            return -super().call_module(target, args, kwargs)
    lin = nn.Linear(2, 2)
    seq = fx.symbolic_trace(nn.Sequential(lin))
    _same(Negate(seq).run(tl.ones(1, 2)), -lin(tl.ones(1, 2)))


def test_shape_prop_records_shapes_and_dtypes():
    gm = fx.symbolic_trace(Block())
    ShapeProp(gm).propagate(tl.randn(5, 4))
    meta = {n.name: n.meta.get("tensor_meta") for n in gm.graph.nodes}
    assert tuple(meta["fc1"].shape) == (5, 8) and meta["fc1"].dtype is tl.float32
    assert tuple(meta["sum_1"].shape) == (5,) and tuple(meta["getitem"].shape) == (2,)
    assert meta["scale"].requires_grad and tuple(meta["fc2"].stride) == (3, 1)


def test_custom_leaves_parameters_and_constants():
    class Traced(fx.Tracer):
        def is_leaf_module(self, m, path):
            return False                       # trace into torchlite's layers too

    class WithConst(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 2)
            self.register_buffer("shift", tl.tensor([1.0, -1.0]))
            self.table = tl.tensor([2.0, 3.0])       # a plain tensor attribute

        def forward(self, x):
            return self.lin(x) + self.shift + self.table

    m = WithConst()
    graph = Traced().trace(m)
    gm = fx.GraphModule(m, graph)
    targets = {n.target for n in graph.nodes if n.op == "get_attr"}
    assert {"lin.weight", "lin.bias", "shift"} <= targets
    assert not any(n.op == "call_module" for n in graph.nodes)
    x = tl.randn(4, 3)
    _same(gm(x), m(x))
    gm2 = fx.symbolic_trace(m)          # table is not a parameter or buffer: a constant
    assert any(n.op == "get_attr" and n.target.startswith("_tensor_constant")
               for n in gm2.graph.nodes)
    assert not hasattr(m, "_tensor_constant0")          # the traced module is not changed
    _same(gm2(x), m(x))


def test_graph_modules_pickle_and_deep_copy():
    """pickle (and so torchlite.save(..., weights_only=False) and DataLoader workers) and
    copy.deepcopy (AveragedModel, EMA copies) of a GraphModule: the same graph, code, class
    name, outputs and gradients; a deep copy owns its parameters; node meta survives; a
    traced constant and a wrapped function come along."""
    import copy
    import pickle

    class WithConst(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.table = tl.tensor([2.0, 3.0, 4.0])       # a plain tensor: a traced constant

        def forward(self, x):
            a, b = self.block(x)
            return scaled_relu(a + self.table, 2.0), b

    gm = fx.symbolic_trace(WithConst())
    assert any(n.target is scaled_relu for n in gm.graph.nodes)
    ShapeProp(gm).propagate(tl.randn(5, 4))
    x = tl.randn(5, 4)
    for other in (pickle.loads(pickle.dumps(gm)), copy.deepcopy(gm)):
        assert type(other).__name__ == type(gm).__name__ and type(other) is not type(gm)
        assert other.code == gm.code
        assert [(n.name, n.op, n.target) for n in other.graph.nodes] == \
            [(n.name, n.op, n.target) for n in gm.graph.nodes]
        assert other.graph.owning_module is other
        assert tuple(next(n for n in other.graph.nodes if n.name == "block_fc1")
                     .meta["tensor_meta"].shape) == (5, 8)
        for a, b in zip(other(x), gm(x)):
            _same(a, b)
        p_other = dict(other.named_parameters())
        for name, p in gm.named_parameters():
            assert p_other[name] is not p
            _same(p_other[name], p)
        other(x)[0].sum().backward()
        assert all(p.grad is not None for p in other.parameters())
        assert all(p.grad is None for p in gm.parameters())
    # a GraphModule inside another module, saved whole
    import io
    buf = io.BytesIO()
    tl.save(nn.Sequential(gm), buf)
    buf.seek(0)
    back = tl.load(buf, weights_only=False)
    _same(back[0](x)[1], gm(x)[1])


def test_tracing_leaves_torchlite_as_it_was():
    before = (tl.relu, F.relu, nn.Module.__call__, nn.Module.__getattr__)
    fx.symbolic_trace(Block())
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(lambda x: x if x else x)
    assert (tl.relu, F.relu, nn.Module.__call__, nn.Module.__getattr__) == before


def test_graph_matches_torch_fx():
    torch = pytest.importorskip("torch")
    import torch.fx  # noqa: F401
    theirs = torch.fx.symbolic_trace(make_block(torch)())
    ours = fx.symbolic_trace(Block())

    def shape(gm):
        return [(n.op, n.name) for n in gm.graph.nodes]
    assert shape(ours) == shape(theirs)


def test_the_transformer_example_traces_and_trains_alike():
    """examples/transformer_lm.py's model: the causal mask from the input's length (a static
    method recorded whole), the encoder a leaf; eager and traced agree on outputs and
    gradients."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
    try:
        from transformer_lm import TinyGPT
    finally:
        sys.path.pop(0)
    tl.manual_seed(3)
    m = TinyGPT(20, 16, d_model=32, heads=2, layers=1, dropout=0.0)
    gm = fx.symbolic_trace(m)
    assert "_generate_square_subsequent_mask(" in gm.code
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == \
        ["tokens", "positions", "blocks", "norm", "head"]
    codes = tl.randint(0, 20, (2, 9))
    out_m, out_g = m(codes), gm(codes)
    _same(out_m, out_g)
    out_m.square().mean().backward()
    want = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    out_g.square().mean().backward()
    for w, p in zip(want, gm.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    _same(gm(codes[:, :4]), m(codes[:, :4]))          # another length: the mask follows
