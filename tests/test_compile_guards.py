"""torchlite.compile's guards on what compiled code reads outside its arguments: each case
changes that state between two calls and checks the compiled callable answers what eager
torchlite does (a recompile), never the captured value; and that sizes come back as
torchlite.Size.  Each case was a stale answer (or a plain tuple) before its guard."""
import enum
import functools
import random
import sys
import types

import numpy as np
import pytest

import torchlite as tl
import torchlite.nn as nn
import torchlite.nn.functional as F
from torchlite.compiler import _compile
from compile_helpers import fresh_compiler  # noqa: F401


def _compiles(fn, *args):
    """fn(*args) and how many graphs that call captured."""
    with _compile.recording() as events:
        out = fn(*args)
    return out, sum(1 for kind, _ in events if kind == "compile")


def _values(t):
    return t.detach().numpy().tolist()


# ---- sizes ------------------------------------------------------------------------------------
def _sizes(x):
    return x.shape, x.size(), x.shape[1:], {"s": x.shape, "n": [x.size(), x.size(0)]}, x * 2


@pytest.mark.parametrize("options", [{}, {"dynamic": True}, {"backend": "eager"},
                                     {"backend": "aot_eager", "dynamic": True}])
def test_a_returned_size_is_a_torchlite_size(options):
    """x.shape, x.size() and x.shape[1:] come back as torchlite.Size, inside tuples, lists
    and dicts too; a dynamic graph's sizes are the call's (batch 4, then 7, then 9)."""
    compiled = tl.compile(_sizes, **options)
    for n in (4, 7, 9):
        x = tl.randn(n, 3, 2)
        got = compiled(x)
        want = _sizes(x)
        for g, w in [(got[0], want[0]), (got[1], want[1]), (got[2], want[2]),
                     (got[3]["s"], want[3]["s"]), (got[3]["n"][0], want[3]["n"][0])]:
            assert type(g) is tl.Size and g == w
        assert got[3]["n"][1] == n and type(got[3]["n"]) is list


def test_size_arithmetic_in_a_dynamic_graph_stays_a_size():
    """Size's own operations on symbolic sizes (a slice plus a tuple, numel) follow the
    call's sizes, one graph for all of them."""
    compiled = tl.compile(lambda x: (x.shape[:1] + (5,), x.shape.numel(), x.flatten(1).shape),
                          dynamic=True)
    for n in (2, 6):
        new_shape, numel, flat = compiled(tl.zeros(n, 3, 2))
        assert type(new_shape) is tl.Size and new_shape == (n, 5)
        assert numel == n * 6
        assert type(flat) is tl.Size and flat == (n, 6)
    assert len(compiled.cache) + len(compiled.dynamic_cache) == 1


def test_a_returned_size_is_a_size_when_the_capture_run_is_the_call():
    """A function that keeps a tensor outside itself runs eagerly after its capture, whose
    run is the first call's: its size is a Size too."""
    kept = []

    def keep(x):
        y = x * 2
        kept.append(y)
        return y.shape
    compiled = tl.compile(keep)
    assert type(compiled(tl.ones(3))) is tl.Size
    assert type(compiled(tl.ones(3))) is tl.Size


# ---- class attributes -------------------------------------------------------------------------
def test_a_class_attribute_of_the_compiled_module_is_guarded():
    class Scaled(nn.Module):
        scale = 2.0

        def forward(self, x):
            return x * self.scale
    compiled = tl.compile(Scaled())
    x = tl.ones(2)
    assert _values(compiled(x)) == [2.0, 2.0]
    Scaled.scale = 3.0
    assert _values(compiled(x)) == [3.0, 3.0]


def test_type_self_attribute_and_a_flag_deciding_a_branch():
    class Flagged(nn.Module):
        FLAG = True

        def forward(self, x):
            return x + 1 if type(self).FLAG else x - 1
    compiled = tl.compile(Flagged())
    x = tl.ones(2)
    assert _values(compiled(x)) == [2.0, 2.0]
    Flagged.FLAG = False
    assert _values(compiled(x)) == [0.0, 0.0]


def test_inherited_class_attributes_changed_on_the_base_or_shadowed_later():
    class Base(nn.Module):
        scale = 2.0

    class Child(Base):
        def forward(self, x):
            return x * self.scale
    compiled = tl.compile(Child())
    x = tl.ones(2)
    assert _values(compiled(x)) == [2.0, 2.0]
    Base.scale = 5.0
    assert _values(compiled(x)) == [5.0, 5.0]
    Child.scale = 7.0                   # the subclass now shadows the base's
    assert _values(compiled(x)) == [7.0, 7.0]


def test_a_class_attribute_of_a_submodule_class():
    class Shift(nn.Module):
        k = 1.0

        def forward(self, x):
            return x + self.k

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.shift = Shift()

        def forward(self, x):
            return self.shift(x) * 2
    compiled = tl.compile(Outer())
    x = tl.ones(2)
    assert _values(compiled(x)) == [4.0, 4.0]
    Shift.k = 2.0
    assert _values(compiled(x)) == [6.0, 6.0]


class _Config:
    alpha = 0.5


def test_a_class_attribute_of_a_plain_class_a_function_reads():
    compiled = tl.compile(lambda x: x * _Config.alpha)
    x = tl.ones(2)
    try:
        assert _values(compiled(x)) == [0.5, 0.5]
        _Config.alpha = 4.0
        assert _values(compiled(x)) == [4.0, 4.0]
    finally:
        _Config.alpha = 0.5


def test_class_attributes_read_by_name_and_a_class_level_tensor():
    class ByName(nn.Module):
        scale = 2.0
        table = tl.tensor([0.0, 1.0])

        def forward(self, x):
            return x * getattr(self, "scale") + self.table
    compiled = tl.compile(ByName())
    x = tl.ones(2)
    assert _values(compiled(x)) == [2.0, 3.0]
    ByName.scale = 3.0
    assert _values(compiled(x)) == [3.0, 4.0]
    ByName.table = tl.tensor([5.0, 5.0])
    assert _values(compiled(x)) == [8.0, 8.0]
    ByName.table.add_(1)
    assert _values(compiled(x)) == [9.0, 9.0]


def test_methods_on_the_class_are_guarded_by_identity_not_recompiled_each_call():
    """A method is code, not a value: calls that change nothing reuse the one graph, and a
    method replaced on the class is a new graph."""
    class WithMethod(nn.Module):
        def bump(self, x):
            return x + 1

        def forward(self, x):
            return self.bump(x) * 2
    compiled = tl.compile(WithMethod())
    x = tl.ones(2)
    counts = [_compiles(compiled, x)[1] for _ in range(4)]
    assert counts == [1, 0, 0, 0]
    WithMethod.bump = lambda self, x: x - 1
    out, n = _compiles(compiled, x)
    assert _values(out) == [0.0, 0.0] and n == 1


# ---- other state the code reads ---------------------------------------------------------------
_SCALE = 2.0


class _ScaleByGlobal(nn.Module):
    def forward(self, x):
        return x * _SCALE


def _times_scale(x):
    return x * _SCALE


def test_globals_read_by_submodules_and_helpers():
    """A global that a submodule's forward or a helper function reads (not the compiled
    function's own code) is guarded too."""
    global _SCALE
    model = nn.Sequential(_ScaleByGlobal())
    compiled_model = tl.compile(model)
    compiled_fn = tl.compile(lambda x: _times_scale(x) + 1)
    x = tl.ones(2)
    try:
        assert _values(compiled_model(x)) == [2.0, 2.0]
        assert _values(compiled_fn(x)) == [3.0, 3.0]
        _SCALE = 3.0
        assert _values(compiled_model(x)) == [3.0, 3.0]
        assert _values(compiled_fn(x)) == [4.0, 4.0]
    finally:
        _SCALE = 2.0


def test_a_property_reading_a_global_or_an_attribute():
    global _SCALE

    class Prop(nn.Module):
        def __init__(self):
            super().__init__()
            self._s = 1.0

        @property
        def s(self):
            return self._s * _SCALE

        def forward(self, x):
            return x * self.s
    model = Prop()
    compiled = tl.compile(model)
    x = tl.ones(2)
    try:
        assert _values(compiled(x)) == [2.0, 2.0]
        model._s = 2.0
        assert _values(compiled(x)) == [4.0, 4.0]
        _SCALE = 3.0
        assert _values(compiled(x)) == [6.0, 6.0]
    finally:
        _SCALE = 2.0


def test_a_module_attribute_holding_a_function_or_an_enum_member():
    class Mode(enum.Enum):
        ADD = 1
        SUB = 2

    class Act(nn.Module):
        def __init__(self):
            super().__init__()
            self.act, self.mode = F.relu, Mode.ADD

        def forward(self, x):
            y = self.act(x - 3)
            return y + 1 if self.mode is Mode.ADD else y - 1
    model = Act()
    compiled = tl.compile(model)
    x = tl.ones(2)
    assert _values(compiled(x)) == [1.0, 1.0]
    model.act = tl.neg
    assert _values(compiled(x)) == [3.0, 3.0]
    model.mode = Mode.SUB
    assert _values(compiled(x)) == [1.0, 1.0]


_MODE = "add"


def _relu(v):
    return F.relu(v)


def _neg(v):
    return -v


_ACTIVATION = _relu


def test_a_global_enum_function_or_model_rebound():
    global _MODE, _ACTIVATION

    class Mode(enum.Enum):
        ADD = 1
        SUB = 2
    _MODE = Mode.ADD
    model = nn.Linear(2, 2, bias=False)
    with tl.no_grad():
        model.weight.fill_(1.0)
    namespace = {"model": model}

    def run(x):
        y = _ACTIVATION(namespace["model"](x) - 3)
        return y + 1 if _MODE is Mode.ADD else y - 1
    compiled = tl.compile(run)
    x = tl.ones(2)
    try:
        assert _values(compiled(x)) == [1.0, 1.0]
        _MODE = Mode.SUB
        assert _values(compiled(x)) == [-1.0, -1.0]
        _ACTIVATION = _neg
        assert _values(compiled(x)) == [0.0, 0.0]
        other = nn.Linear(2, 2, bias=False)
        with tl.no_grad():
            other.weight.fill_(2.0)
        namespace["model"] = other              # a dict of the code's: guarded by value
        assert _values(compiled(x)) == [-2.0, -2.0]
    finally:
        _MODE, _ACTIVATION = "add", _relu


def test_default_values_and_closures_of_the_function_and_its_helpers():
    def scaled(x, s=2.0):
        return x * s
    compiled = tl.compile(scaled)
    x = tl.ones(2)
    assert _values(compiled(x)) == [2.0, 2.0]
    scaled.__defaults__ = (3.0,)
    assert _values(compiled(x)) == [3.0, 3.0]

    factors = [2.0]

    def make_helper():
        def helper(v, extra=[1.0]):     # noqa: B006 (a mutable default, changed below)
            return v * factors[0] + extra[0]
        return helper
    helper = make_helper()
    compiled = tl.compile(lambda v: helper(v))
    assert _values(compiled(x)) == [3.0, 3.0]
    factors[0] = 3.0
    assert _values(compiled(x)) == [4.0, 4.0]
    helper.__defaults__[0][0] = 0.0
    assert _values(compiled(x)) == [3.0, 3.0]


def test_a_functools_partial_changed():
    scale = functools.partial(tl.mul, other=2.0)
    compiled = tl.compile(lambda x: scale(x) + 1)
    x = tl.ones(2)
    assert _values(compiled(x)) == [3.0, 3.0]
    scale.keywords["other"] = 5.0
    assert _values(compiled(x)) == [6.0, 6.0]


def test_a_plain_config_object_held_by_a_module():
    class Config:
        shift = 1.0

        def __init__(self):
            self.scale = 2.0

    class Configured(nn.Module):
        def __init__(self):
            super().__init__()
            self.cfg = Config()

        def forward(self, x):
            return x * self.cfg.scale + self.cfg.shift
    model = Configured()
    compiled = tl.compile(model)
    x = tl.ones(2)
    assert _values(compiled(x)) == [3.0, 3.0]
    model.cfg.scale = 3.0
    assert _values(compiled(x)) == [4.0, 4.0]
    Config.shift = 0.0
    assert _values(compiled(x)) == [3.0, 3.0]


def test_a_config_object_passed_as_an_argument():
    class Config:
        def __init__(self):
            self.scale = 2.0
    cfg, ns = Config(), types.SimpleNamespace(scale=2.0)
    compiled = tl.compile(lambda x, c: x * c.scale)
    x = tl.ones(2)
    for c in (cfg, ns):
        assert _values(compiled(x, c)) == [2.0, 2.0]
        c.scale = 3.0
        assert _values(compiled(x, c)) == [3.0, 3.0]


def test_attributes_of_a_python_module_of_the_users(tmp_path, monkeypatch):
    (tmp_path / "guarded_user_config.py").write_text("SCALE = 2.0\n\nclass Inner:\n    K = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import guarded_user_config as config
    try:
        compiled = tl.compile(lambda x: x * config.SCALE + config.Inner.K)
        x = tl.ones(2)
        assert _values(compiled(x)) == [3.0, 3.0]
        config.SCALE = 3.0
        assert _values(compiled(x)) == [4.0, 4.0]
        config.Inner.K = 2.0
        assert _values(compiled(x)) == [5.0, 5.0]
    finally:
        sys.modules.pop("guarded_user_config", None)


def _scaled_by(draw):
    def scaled(v):
        return v * draw()
    return scaled


def test_python_and_numpy_random_draws_run_eagerly_with_eagers_numbers():
    """A number drawn from Python's random module or NumPy's global generator would be a
    constant of the graph: a graph break, and the capture's draw is put back so the eager
    run draws the same numbers eager would."""
    x = tl.ones(2)
    for seed, draw in ((random.seed, random.random), (np.random.seed, lambda: float(np.random.rand()))):
        scaled = _scaled_by(draw)
        compiled = tl.compile(scaled)
        seed(0)
        got = [_values(compiled(x)) for _ in range(3)]
        seed(0)
        want = [_values(scaled(x)) for _ in range(3)]
        assert got == want and got[0] != got[1]


def test_a_compiled_method_other_than_forward_guards_its_modules_state():

    class Scaled(tl.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tl.nn.Linear(4, 4)
            self.k = 3.0

        def loss(self, x):
            return (self.fc(x) * self.k).sum()

    m = Scaled()
    c = tl.compile(m.loss)
    x = tl.randn(2, 4)
    np.testing.assert_allclose(c(x).item(), m.loss(x).item(), rtol=1e-6)
    m.k = 4.0                                   # a plain attribute of the method's module
    np.testing.assert_allclose(c(x).item(), m.loss(x).item(), rtol=1e-6)
    with tl.no_grad():
        m.fc.weight.mul_(2.0)                   # its parameters are read live
    np.testing.assert_allclose(c(x).item(), m.loss(x).item(), rtol=1e-6)
    m.fc = tl.nn.Linear(4, 4)                   # a replaced submodule
    np.testing.assert_allclose(c(x).item(), m.loss(x).item(), rtol=1e-6)
    c2 = tl.compile(types.MethodType(Scaled.loss, m))
    np.testing.assert_allclose(c2(x).item(), m.loss(x).item(), rtol=1e-6)
