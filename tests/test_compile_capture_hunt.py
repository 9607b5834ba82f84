"""Adversarial checks of three capture changes: torchlite functions imported by name patched
for the duration of a trace (fx/_symbolic_trace.py), the guards' cached walk of module trees
(compiler/_compile.py with nn's module epoch) and the compiled code holding the root's
parameters and buffers themselves (_bind_module_tensors).  Every check compares against eager
torchlite."""
import copy
import pickle
import sys
import threading
import types

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
from torchlite import cat as concat
from torchlite.nn.functional import relu as rectify


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _targets(graph):
    return [getattr(n.target, "__name__", n.target) for n in graph.nodes if n.op == "call_function"]


_USER_SRC = '''
import torchlite.nn as nn
from torchlite import *  # noqa
from torchlite import cat as concat
from torchlite.nn.functional import relu as rectify


def star(x):
    return flatten(cat([x, sigmoid(x)], 0), 0)


def boom(x):
    concat([rectify(x), x], 0)
    raise ValueError("boom")


class Boom(nn.Module):
    def forward(self, x):
        flatten(rectify(x), 0)
        raise KeyError("boom")
'''


@pytest.fixture
def user_module():
    """A user's module (not torchlite's) that star-imports torchlite and aliases names."""
    mod = types.ModuleType("hunt_user_mod")
    sys.modules[mod.__name__] = mod
    try:
        exec(compile(_USER_SRC, "<hunt_user_mod>", "exec"), vars(mod))
        yield mod
    finally:
        del sys.modules[mod.__name__]


# ---- 1. names imported by name ------------------------------------------------------------------
def test_star_import_and_aliases_record_and_match_eager(user_module):
    gm = tl.fx.symbolic_trace(user_module.star)
    assert {"sigmoid", "cat", "flatten"} <= set(_targets(gm.graph))
    x = tl.randn(3, 2)
    _close(gm(x), user_module.star(x))
    assert user_module.cat is tl.cat and user_module.flatten is tl.flatten


def test_alias_in_the_test_module_and_a_bound_method():
    class Obj:
        def method(self, x):
            return concat([rectify(x), x * 2.0], 0)
    o = Obj()
    gm = tl.fx.symbolic_trace(o.method)
    assert {"cat", "relu"} <= set(_targets(gm.graph))
    x = tl.randn(2, 3)
    _close(gm(x), o.method(x))
    assert concat is tl.cat and rectify is tl.nn.functional.relu


def test_nested_closures():
    def make():
        from torchlite.nn.functional import relu as r3

        def outer(x):
            def inner(y):
                return r3(y)
            return inner(x) + 1.0
        return outer
    fn = make()
    gm = tl.fx.symbolic_trace(fn)
    x = tl.randn(4)
    _close(gm(x), fn(x))
    assert fn.__closure__[0].cell_contents is tl.nn.functional.relu


def _closure_module():
    from torchlite import cat as c2
    from torchlite.nn.functional import relu as r2

    class Inner(nn.Module):
        def forward(self, x):
            return c2([r2(x), x], 0)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) * 2.0
    return Outer()


def test_module_class_made_in_a_function_reads_its_imports_through_cells():
    # found: the class's forward reads relu/cat through closure cells, which were not
    # patched (only the traced function's own cells were): relu ran on a Proxy
    m = _closure_module()
    x = tl.randn(2, 3)
    gm = tl.fx.symbolic_trace(m)
    assert {"cat", "relu"} <= set(_targets(gm.graph))
    _close(gm(x), m(x))
    _close(tl.jit.trace(m, (x,))(x), m(x))
    c = tl.compile(m, fullgraph=True)
    _close(c(x), m(x))
    cells = type(m.inner).forward.__closure__
    assert {cell.cell_contents for cell in cells} == {tl.cat, tl.nn.functional.relu}


class _MyEncoderLayer(nn.TransformerEncoderLayer):
    pass


def test_a_users_subclass_of_a_torchlite_layer_traces_through():
    # found: tracing through the subclass patched torchlite.nn.modules.transformer's globals,
    # so `act in (_F_RELU, _F_GELU)` compared F.relu with its patched alias, missed, and the
    # layer's stored F.relu ran on a Proxy (TypeError)
    tl.manual_seed(0)
    m = _MyEncoderLayer(8, 2, 16, dropout=0.0).eval()
    x = tl.randn(3, 2, 8)
    gm = tl.fx.symbolic_trace(m, concrete_args={"src_mask": None, "src_key_padding_mask": None,
                                                "is_causal": False})
    assert "relu" in _targets(gm.graph)
    _close(gm(x), m(x))
    _close(tl.jit.trace(m, (x,))(x), m(x))
    _close(tl.compile(m, fullgraph=True)(x), m(x))
    from torchlite.nn.modules import transformer
    assert transformer._F_RELU is tl.nn.functional.relu


@pytest.mark.parametrize("how", ["fx", "jit", "compile"])
@pytest.mark.parametrize("which", ["boom", "Boom"])
def test_no_patch_leaks_after_an_exception(user_module, how, which):
    before = dict(vars(user_module))
    fn = user_module.boom if which == "boom" else user_module.Boom()
    x = tl.randn(3)
    with pytest.raises((ValueError, KeyError)):
        if how == "fx":
            tl.fx.symbolic_trace(fn)
        elif how == "jit":
            tl.jit.trace(fn, (x,))
        else:
            tl.compile(fn)(x)
    assert all(vars(user_module)[k] is v for k, v in before.items())
    assert not hasattr(tl.cat, "_fx_original") and not hasattr(tl.nn.functional.relu, "_fx_original")
    assert tl.nn.Module.__call__ is nn.Module.__dict__["__call__"]


# ---- 2. the cached walk of the module trees ----------------------------------------------------------
class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("shift", tl.randn(3))

    def forward(self, x):
        return self.fc(x) + self.shift


def _compiled_net():
    m = _Net()
    c = tl.compile(m)
    x = tl.randn(5, 4)
    _close(c(x), m._call_impl(x))
    _close(c(x), m._call_impl(x))
    return m, c, x


def test_a_modules_class_assigned_is_seen():
    # found: `m.__class__ = Other` moves no epoch and the walk did not key a module's class:
    # the old class's graph ran
    class A(nn.Module):
        def forward(self, x):
            return x + 1.0

    class B(nn.Module):
        def forward(self, x):
            return x + 2.0
    m = A()
    c = tl.compile(m)
    y = tl.zeros(3)
    _close(c(y), m._call_impl(y))
    _close(c(y), m._call_impl(y))
    m.__class__ = B
    _close(c(y), m._call_impl(y))
    np.testing.assert_array_equal(c(y).numpy(), [2.0, 2.0, 2.0])


def test_parameter_replaced_through_the_dict_and_deleted_then_registered():
    m, c, x = _compiled_net()
    m.fc._parameters["weight"] = nn.Parameter(tl.randn(3, 4))
    _close(c(x), m._call_impl(x))
    del m.fc.weight
    m.fc.weight = nn.Parameter(tl.randn(3, 4))
    _close(c(x), m._call_impl(x))
    m._buffers["shift"] = tl.randn(3)
    _close(c(x), m._call_impl(x))


def test_to_float64_and_load_state_dict():
    m, c, x = _compiled_net()
    other = _Net()
    m.load_state_dict(other.state_dict(), assign=True)
    _close(c(x), other(x))
    other2 = _Net()
    m.load_state_dict(other2.state_dict())
    _close(c(x), other2(x))
    m.to(tl.float64)
    xd = x.double()
    out = c(xd)
    assert out.dtype == tl.float64
    _close(out, m._call_impl(xd))


def test_buffers_set_to_none_registered_later_and_a_parameter_also_a_buffer():
    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.register_buffer("b", tl.ones(3))

        def forward(self, x):
            y = x * 2.0 if self.b is None else x + self.b
            if hasattr(self, "extra"):
                y = y + self.extra
            return self.fc(y)
    m = B()
    c = tl.compile(m)
    y = tl.randn(2, 3)
    _close(c(y), m._call_impl(y))
    m.b = None
    _close(c(y), m._call_impl(y))
    m.b = tl.full((3,), 5.0)
    _close(c(y), m._call_impl(y))
    m.register_buffer("extra", tl.randn(3))
    _close(c(y), m._call_impl(y))
    m.register_buffer("shared", m.fc.weight)        # a parameter also a buffer
    with tl.no_grad():
        m.fc.weight.mul_(-1.0)
    _close(c(y), m._call_impl(y))


def test_tied_weights_untied_and_changed_in_place():
    class T(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    m = T()
    c = tl.compile(m)
    x = tl.randn(2, 4)
    _close(c(x), m._call_impl(x))
    with tl.no_grad():
        m.a.weight.mul_(0.5)                       # both uses see it
    _close(c(x), m._call_impl(x))
    m.a.weight = nn.Parameter(tl.randn(4, 4))      # untied
    _close(c(x), m._call_impl(x))
    with tl.no_grad():
        m.b.weight.mul_(2.0)
    _close(c(x), m._call_impl(x))


def test_hooks_on_a_child_after_the_first_calls():
    m, c, x = _compiled_net()
    h = m.fc.register_forward_hook(lambda mod, i, o: o * 10.0)
    _close(c(x), m._call_impl(x))
    h.remove()
    _close(c(x), m._call_impl(x))
    h = m.fc.register_forward_pre_hook(lambda mod, i: (i[0] * 3.0,))
    _close(c(x), m._call_impl(x))
    h.remove()
    h = m.fc.register_forward_hook(lambda mod, a, k, o: o + 1.0, with_kwargs=True)
    _close(c(x), m._call_impl(x))
    h.remove()
    _close(c(x), m._call_impl(x))


def test_plain_list_attribute_mutated_in_place_and_eval():
    class L(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = [1.0, 2.0, 3.0]
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            return self.drop(x) * self.scales[1]
    m = L()
    c = tl.compile(m)
    y = tl.ones(64)
    c(y)
    m.eval()
    _close(c(y), m._call_impl(y))
    m.scales[1] = 7.0
    _close(c(y), m._call_impl(y))


def test_weight_norm_parametrize_and_pruning_after_compiling():
    import torchlite.nn.utils.parametrize as P
    import torchlite.nn.utils.prune as prune

    class Double(nn.Module):
        def forward(self, w):
            return w * 2.0
    m, c, x = _compiled_net()
    P.register_parametrization(m.fc, "weight", Double())
    _close(c(x), m._call_impl(x))
    with tl.no_grad():
        m.fc.parametrizations.weight.original.mul_(3.0)
    _close(c(x), m._call_impl(x))
    P.remove_parametrizations(m.fc, "weight", leave_parametrized=True)
    _close(c(x), m._call_impl(x))
    prune.l1_unstructured(m.fc, "weight", amount=0.5)
    _close(c(x), m._call_impl(x))
    prune.remove(m.fc, "weight")
    _close(c(x), m._call_impl(x))
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(m.fc)
    with tl.no_grad():
        m.fc.weight_g.mul_(3.0)
    _close(c(x), m._call_impl(x))


def test_deepcopy_and_pickle_of_a_compiled_module():
    m, c, x = _compiled_net()
    m.compile()
    m(x)
    m2 = copy.deepcopy(m)
    with tl.no_grad():
        m2.fc.weight.mul_(2.0)
    _close(m2(x), m2._call_impl(x))
    _close(m(x), m._call_impl(x))
    m3 = pickle.loads(pickle.dumps(m))
    m3.fc.weight = nn.Parameter(tl.randn(3, 4))
    _close(m3(x), m3._call_impl(x))
    _close(m(x), m._call_impl(x))


def test_two_threads_call_one_compiled_module():
    m, c, x = _compiled_net()
    ref = m._call_impl(x).detach().numpy()
    errors = []

    def work():
        try:
            for _ in range(20):
                if not np.allclose(c(x).detach().numpy(), ref, atol=1e-6):
                    errors.append("wrong")
        except Exception as e:          # pragma: no cover - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# ---- 3. the graph holding the root's parameters and buffers ---------------------------------------------
def test_bound_tensors_with_colliding_and_odd_names():
    class N(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 3)
            self.fc1_weight = nn.Parameter(tl.randn(3, 3))    # fc1.weight's code name too
            self.register_parameter("inf", nn.Parameter(tl.randn(3)))
            self.register_buffer("torchlite", tl.randn(3))
            self.register_buffer("operator", tl.randn(3))
            self.register_parameter("max", nn.Parameter(tl.randn(3)))
            self.d = nn.ModuleDict({"a-b": nn.Linear(3, 3), "1": nn.Linear(3, 3),
                                    "class": nn.Linear(3, 3)})

        def forward(self, x):
            y = self.fc1(x) + x @ self.fc1_weight + self.inf + self.torchlite + self.operator
            y = y.clamp(max=float("inf")) + tl.maximum(y, self.max)
            y = y.masked_fill(y > 100.0, float("-inf"))
            return self.d["a-b"](y) + self.d["1"](y) + self.d["class"](y)
    m = N()
    c = tl.compile(m, fullgraph=True)
    x = tl.randn(2, 3)
    _close(c(x), m._call_impl(x))
    with tl.no_grad():
        m.fc1.weight.mul_(2.0)
        m.d["a-b"].bias.add_(1.0)
    _close(c(x), m._call_impl(x))
    m.d["1"].weight = nn.Parameter(tl.randn(3, 3))
    _close(c(x), m._call_impl(x))


def test_bound_tensors_of_nested_paths_and_their_gradients():
    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(tl.randn(3))

        def forward(self, x):
            return x * self.w

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(Inner(), Inner())
            self.seq_0_w = nn.Parameter(tl.randn(3))

        def forward(self, x):
            return (self.seq(x) + self.seq_0_w).sum()
    m = Outer()
    c = tl.compile(m, fullgraph=True)
    x = tl.randn(2, 3)
    c(x).backward()
    grads = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m._call_impl(x).backward()
    for g, p in zip(grads, m.parameters()):
        _close(g, p.grad)
    with tl.no_grad():
        m.seq[0].w.mul_(3.0)
    _close(c(x), m._call_impl(x))
    m.seq[1].w = nn.Parameter(tl.randn(3))
    _close(c(x), m._call_impl(x))
