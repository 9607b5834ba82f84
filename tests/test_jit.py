"""torchlite.jit: trace (the ops one run executes, sizes and branches fixed by the example),
script (symbolic capture or a clear error), and the markers scripts use.  The oracle is the
eager module: on inputs that take the example's path the traced module must agree with it,
values and gradients."""
import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite import jit


class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.lstm = nn.LSTM(3, 4, batch_first=True)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:                   # fixed by the example
            y = y * 2
        else:
            y = -y
        for i in range(x.shape[0]):       # unrolled: as many steps as the example's rows
            y = y + i
        _, (h, _) = self.lstm(y.unsqueeze(0))
        return self.bn(y) + y.T.sum(), h


def _same(a, b, tol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_trace_records_the_example_run():
    tl.manual_seed(0)
    m = Branchy().eval()
    x = tl.randn(4, 3)
    tm = jit.trace(m, x)
    assert isinstance(tm, jit.TracedModule) and isinstance(tm, tl.fx.GraphModule)
    for a, b in zip(m(x), tm(x)):
        _same(a, b)
    code = tm.code
    assert "if" not in code and code.count(" + ") >= 4           # the loop unrolled
    assert "self.lstm(" in code and "self.bn(" in code            # torchlite layers stay whole
    took_positive = (m.lin(x).sum() > 0).item()
    assert ("* 2" in code) == took_positive and ("-l" in code) != took_positive


def test_check_inputs_that_take_another_path_fail_the_check():
    class Sign(nn.Module):
        def forward(self, x):
            return x * 2 if x.sum() > 0 else x * 3
    with pytest.raises(jit.TracingCheckError, match="disagree"):
        jit.trace(Sign(), tl.ones(3), check_inputs=[(-tl.ones(3),)])
    tm = jit.trace(Sign(), tl.ones(3), check_inputs=[(tl.full((3,), 5.0),)])
    _same(tm(tl.ones(3)), tl.full((3,), 2.0))


def test_gradients_through_a_traced_module():
    tl.manual_seed(1)
    m = nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.LayerNorm(6), nn.Linear(6, 2))
    x = tl.randn(5, 4)
    tm = jit.trace(m, x)
    m(x).pow(2).sum().backward()
    want = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    tm(x).pow(2).sum().backward()
    for w, p in zip(want, tm.parameters()):
        _same(w, p.grad)


def test_trace_functions_and_keyword_examples():
    f = jit.trace(lambda a, b: (a * b).sum(0) + a.shape[1], (tl.ones(2, 3), tl.ones(2, 3)))
    assert "+ 3" in f.code                                      # the size, fixed
    _same(f(tl.full((2, 3), 2.0), tl.ones(2, 3)), tl.full((3,), 7.0))

    class Kw(nn.Module):
        def forward(self, x, scale):
            return x * scale
    tm = jit.trace(Kw(), example_kwarg_inputs={"x": tl.ones(2), "scale": tl.full((2,), 3.0)})
    _same(tm(tl.ones(2), tl.full((2,), 4.0)), tl.full((2,), 4.0))
    with pytest.raises(RuntimeError, match="example_inputs"):
        jit.trace(Kw())


def test_is_tracing_inside_a_trace_only():
    seen = []

    class Probe(nn.Module):
        def forward(self, x):
            seen.append(jit.is_tracing())
            return x + 1
    jit.trace(Probe(), tl.ones(2), check_trace=False)
    Probe()(tl.ones(2))
    assert seen == [True, False] and not jit.is_scripting()


def test_script_captures_what_it_can_and_names_what_it_cannot():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    s = jit.script(seq)
    x = tl.randn(3, 2)
    _same(s(x), seq(x))
    assert "def forward" in s.code and not isinstance(s, jit.ScriptModule)
    with pytest.raises(RuntimeError, match="control flow") as e:
        jit.script(Branchy())
    assert "if y.sum() > 0:" in str(e.value) and "jit.trace" in str(e.value)

    def plain(a):
        return a + 1
    assert jit.script(plain) is plain


def test_freeze_and_the_markers():
    m = nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="eval mode"):
        jit.freeze(m)
    assert jit.freeze(m.eval()) is m

    @jit.ignore
    def a():
        return 1

    @jit.ignore(drop=True)
    def b():
        return 2

    @jit.unused
    def c():
        return 3

    @jit.export
    def d():
        return 4
    assert (a(), b(), c(), d()) == (1, 2, 3, 4)
    assert jit.annotate(list, [1]) == [1]


def test_traced_outputs_match_torch_jit_trace():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    mods = {}
    for lib in (tl, torch):
        m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
        mods[lib.__name__] = (lib, m)
    tl_m, torch_m = mods["torchlite"][1], mods["torch"][1]
    with torch.no_grad():
        for a, b in zip(tl_m.parameters(), torch_m.parameters()):
            b.copy_(torch.tensor(a.detach().numpy()))
    ours = jit.trace(tl_m, tl.tensor(x))(tl.tensor(x))
    theirs = torch.jit.trace(torch_m, torch.tensor(x))(torch.tensor(x))
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


# ---- save / load ----------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, activation="gelu")
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 3)
        self.scale = nn.Parameter(tl.ones(3))

    def forward(self, x):
        h, _ = self.lstm(self.emb(x))
        h = self.enc(h)
        return self.head(self.bn(h.mean(1))) * self.scale


def test_save_and_load_round_trip(tmp_path):
    tl.manual_seed(4)
    m = Net().eval()
    x = tl.randint(0, 10, (4, 5))
    path = tmp_path / "net.pt"
    jit.save(jit.trace(m, x), str(path))
    loaded = jit.load(str(path), map_location="cpu")
    _same(loaded(x), m(x))
    assert loaded.code == jit.trace(m, x).code
    assert sorted(loaded.state_dict()) == sorted(jit.trace(m, x).state_dict())
    assert not loaded.training and not loaded.enc.training
    loaded.train()                                 # the loaded parameters train
    opt = tl.optim.SGD(loaded.parameters(), lr=0.1)
    loss = loaded(x).square().mean()
    loss.backward()
    opt.step()
    assert loaded(x).square().mean().item() != loss.item()


def test_a_saved_module_loads_without_its_class(tmp_path):
    import subprocess
    import sys
    tl.manual_seed(5)
    m = Net().eval()
    x = tl.randint(0, 10, (2, 6))
    jit.save(jit.trace(m, x), str(tmp_path / "net.pt"))
    tl.save(x, str(tmp_path / "x.pt"))
    code = ("import torchlite as t; m = t.jit.load('net.pt'); x = t.load('x.pt'); "
            "print(repr(m(x).tolist()))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    np.testing.assert_allclose(np.array(eval(out.stdout)), m(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def _jit_blob(tmp_path, mutate):
    """A saved file with its graph JSON changed by mutate(desc)."""
    import json
    path = tmp_path / "m.pt"
    jit.save(jit.trace(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), tl.ones(1, 2)), str(path))
    blob = tl.load(str(path))
    desc = json.loads(blob["graph"])
    mutate(desc)
    blob["graph"] = json.dumps(desc)
    tl.save(blob, str(path))
    return str(path)


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d["nodes"][1].update(op="call_function", target="os.system",
                                    args={"tuple": ["echo pwned"]}), "not one torchlite files"),
    (lambda d: d["layers"]["0"].update({"class": "subprocess.Popen"}), "not a torchlite.nn"),
    (lambda d: d["nodes"][2].update(op="call_method", target="_data",
                                    args={"tuple": [{"node": "input_1"}]}), "Tensor method"),
    (lambda d: d["nodes"][2].update(args={"tuple": [{"node": "nowhere"}]}), "unknown node"),
    (lambda d: d.update(format=99), "unknown graph format"),
    (lambda d: d["nodes"][1].update(args={"tuple": [{"pickle": "cos\nsystem"}]}),
     "unknown value"),
])
def test_load_refuses_what_it_does_not_know(tmp_path, mutate, message):
    path = _jit_blob(tmp_path, mutate)
    with pytest.raises(RuntimeError, match=message):
        jit.load(path)


def test_load_runs_no_code_from_the_file(tmp_path):
    import os
    import pickle
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))
    path = tmp_path / "evil.pt"
    with open(path, "wb") as f:
        pickle.dump(Evil(), f)
    with pytest.raises(RuntimeError, match="torchlite.jit.load"):
        jit.load(str(path))
    tl.save({"weights": tl.ones(2)}, str(tmp_path / "plain.pt"))
    with pytest.raises(RuntimeError, match="not a file torchlite.jit.save wrote"):
        jit.load(str(tmp_path / "plain.pt"))
    good = tmp_path / "good.pt"
    jit.save(jit.trace(nn.Linear(2, 2), tl.ones(1, 2)), str(good))
    (tmp_path / "cut.pt").write_bytes(good.read_bytes()[:200])
    with pytest.raises(RuntimeError, match="cannot read"):
        jit.load(str(tmp_path / "cut.pt"))
    assert not marker.exists()


def test_save_says_what_it_cannot_save():
    with pytest.raises(TypeError, match="GraphModule"):
        jit.save(nn.Linear(2, 2), "unused.pt")
    lin = nn.Linear(2, 2)
    lin.callback = lambda t: t                         # not data
    with pytest.raises(RuntimeError, match="attribute 'callback' of the layer at '0'"):
        jit.save(jit.trace(nn.Sequential(lin), tl.ones(1, 2)), "unused.pt")


def test_fork_and_wait_run_eagerly_as_pytorchs():
    """torch.jit.fork / torch.fork in eager mode: the function runs at once, its exception
    comes out of fork, the Future is complete and wait gives the result."""
    calls = []

    def f(x, scale=1):
        calls.append(x)
        return x * scale
    fut = jit.fork(f, tl.ones(2), scale=3)
    assert calls and fut.done()
    assert jit.wait(fut).tolist() == [3.0, 3.0]
    assert tl.wait(tl.fork(f, 2)) == 2
    assert tl.fork is jit.fork and tl.wait is jit.wait

    def bad():
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        jit.fork(bad)


def test_trace_with_positional_and_keyword_examples_binds_each_to_its_parameter():
    class M(tl.nn.Module):
        def forward(self, a, b=None, c=None):
            return a * 2 + (0 if b is None else b) + (0 if c is None else c * 3)
    a, c = tl.ones(2), tl.ones(2)
    traced = tl.jit.trace(M(), (a,), example_kwarg_inputs={"c": c}, check_trace=False)
    assert [n.target for n in traced.graph.nodes if n.op == "placeholder"] == ["a", "c"]
    x, z = tl.tensor([1.0, 2.0]), tl.tensor([10.0, 20.0])
    assert traced(x, z).tolist() == (x * 2 + z * 3).tolist()
    with pytest.raises(TypeError, match="example_kwarg_inputs names 'a'"):
        tl.jit.trace(M(), (a,), example_kwarg_inputs={"a": c}, check_trace=False)


def test_traced_module_save_and_extra_files(tmp_path):
    class M(tl.nn.Module):
        def forward(self, x):
            return x * 2
    traced = tl.jit.trace(M(), tl.ones(2))
    path = str(tmp_path / "m.pt")
    traced.save(path, _extra_files={"meta.txt": "hello", "raw.bin": b"\x00\x01"})
    extra = {"meta.txt": "", "raw.bin": "", "absent": "kept"}
    loaded = tl.jit.load(path, _extra_files=extra)
    assert extra == {"meta.txt": b"hello", "raw.bin": b"\x00\x01", "absent": "kept"}
    assert loaded(tl.tensor([1.0, 3.0])).tolist() == [2.0, 6.0]
    with pytest.raises(TypeError):
        traced.save(path, _extra_files={"bad": 3})
