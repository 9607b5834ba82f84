"""The guards' walk of the module trees is kept while no module changes (Module.__setattr__,
__delattr__ and the parameter/buffer/child dicts bump nn's module epoch); every kind of change
is still seen, and trees holding values that change in place are walked on every call."""
import copy
import io
import pickle

import numpy as np

import torchlite as tl
import torchlite.nn as nn
from torchlite.nn.modules.module import _TrackedDict


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(x) * self.scale


def _compiled(m):
    c = tl.compile(m)
    return c, c._compiled


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_the_walk_is_kept_and_every_change_is_seen():
    m = _Net()
    c, comp = _compiled(m)
    x = tl.randn(5, 4)
    _close(c(x), m(x))
    assert comp._tree_key is not None            # a tree of plain values: kept
    key = comp._tree_key
    c(x)
    assert comp._tree_key is key                 # nothing changed: not walked again
    m.scale = 3.0                                # an attribute
    _close(c(x), m(x))
    m.eval()                                     # the training flag
    _close(c(x), m(x))
    new_w = nn.Parameter(tl.randn(3, 4))
    m.fc._parameters["weight"] = new_w           # the dict written directly (as pruning does)
    _close(c(x), m(x))
    assert comp._tree_key is not key and comp._tree_key[2][1] is m.fc
    m.fc = nn.Linear(4, 3)                       # a child replaced
    _close(c(x), m(x))


def test_hooks_registered_later_make_the_call_eager_and_removing_them_compiles_again():
    m = _Net()
    c, comp = _compiled(m)
    x = tl.randn(2, 4)
    c(x)
    seen = []
    h = m.fc.register_forward_hook(lambda mod, args, out: seen.append(out.shape))
    c(x)
    assert seen == [(2, 3)]                      # the hook ran: the call went eager
    h.remove()
    c(x)
    assert seen == [(2, 3)]


def test_values_that_change_in_place_are_read_on_every_call():
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.offsets = [1.0]                 # a list: guarded by value
            self.shift = tl.zeros(3)             # a plain tensor: by version

        def forward(self, x):
            return x + self.offsets[0] + self.shift
    m = Holder()
    c, comp = _compiled(m)
    x = tl.randn(2, 3)
    _close(c(x), m(x))
    assert comp._tree_key is None                # not kept: such a tree is walked each call
    m.offsets[0] = 5.0
    _close(c(x), m(x))
    m.shift.add_(1.0)
    _close(c(x), m(x))


def test_tracked_dicts_pickle_and_copy_as_plain_dicts_and_come_back_tracked():
    m = _Net()
    assert type(m._parameters) is _TrackedDict and type(m._modules) is _TrackedDict
    p = pickle.dumps(m._parameters)
    assert b"_TrackedDict" not in p              # a checkpoint names no private class
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(clone._parameters) is _TrackedDict
        assert type(clone.fc._buffers) is _TrackedDict
        x = tl.randn(2, 4)
        _close(clone(x), m(x))
    buf = io.BytesIO()
    tl.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = _Net()
    m2.load_state_dict(tl.load(buf))
    _close(m2(tl.ones(1, 4)), m(tl.ones(1, 4)))


def test_sequential_deletion_renumbers_and_is_seen():
    m = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 2))
    c, comp = _compiled(m)
    x = tl.randn(4, 3)
    _close(c(x), m(x))
    del m[1]
    assert list(m._modules) == ["0", "1"] and type(m._modules) is _TrackedDict
    _close(c(x), m(x))                           # Linear(3, 3) then Linear(3, 2), no ReLU


def test_the_graph_holds_the_parameters_themselves_and_follows_their_replacement():
    m = _Net()
    c, comp = _compiled(m)
    x = tl.randn(3, 4)
    _close(c(x), m(x))
    (entry,) = comp.cache.values()
    assert not [n for n in entry.graph.nodes if n.op == "get_attr"]     # no attribute chains
    with tl.no_grad():
        m.fc.weight.mul_(3.0)                   # changed in place: the same tensor, read as is
    _close(c(x), m(x))
    m.fc.weight = nn.Parameter(tl.randn(3, 4))  # replaced: a new key, a new graph
    _close(c(x), m(x))
    assert len(comp.cache) == 2
    m.double()                                  # (a new dtype for the parameters)
    xd = x.double()
    _close(c(xd), m(xd))
    # training: gradients reach the parameters the graph holds
    m2 = _Net()
    c2, _ = _compiled(m2)
    c2(x).sum().backward()
    g = m2.fc.weight.grad.numpy().copy()
    m2.zero_grad()
    m2(x).sum().backward()
    np.testing.assert_allclose(g, m2.fc.weight.grad.numpy(), rtol=1e-6)
