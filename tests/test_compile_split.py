"""Graph breaks split the compiled function around the breaking statement
(torchlite/compiler/_split.py): the statements before it and after it are graphs, the
breaking statement runs eagerly on every call.  Every case is checked against the same code
run eagerly (values, gradients, side effects, exceptions), and the graph count against
torch._dynamo.explain's spelling."""
import contextlib
import io
import traceback

import numpy as np
import pytest

import torchlite as tl
import torchlite._dynamo as dynamo
import torchlite.nn as nn
import torchlite.nn.functional as F
from compile_helpers import fresh_compiler, kernels_of  # noqa: F401


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def with_print(x, y):
    a = (x * 2).sin() + y
    b = a * a
    print("middle", round(float(a.sum()), 3))
    c = (b + 1).exp() * a
    return c - y


def test_print_in_the_middle_runs_every_call_between_two_graphs():
    x, y = tl.randn(8), tl.randn(8)
    c = tl.compile(with_print)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        got = [c(x, y) for _ in range(3)]
    want_out = io.StringIO()
    with contextlib.redirect_stdout(want_out):
        want = with_print(x, y)
    assert out.getvalue() == want_out.getvalue() * 3
    for g in got:
        _same(g, want)
    e = dynamo.explain(with_print)(x, y)
    assert e.graph_count == 2 and e.graph_break_count == 1


def branching(x):
    h = x.relu() * 3 + 1
    if h.sum() > 10:
        return h * 2
    z = h - 1
    return z.exp() + x


@pytest.mark.parametrize("scale", [5.0, -5.0])
def test_a_data_dependent_branch_takes_either_way_and_a_return_inside_it(scale):
    c = tl.compile(branching)
    for s in (scale, -scale, scale):
        x = tl.full((4,), s) + tl.randn(4) * 0.1
        _same(c(x), branching(x))


def with_item(x):
    y = x * 3
    s = y.sum().item()
    return x / (abs(s) + 1)


def test_item_gives_a_number_to_the_next_graph():
    c = tl.compile(with_item)
    for _ in range(3):
        x = tl.randn(5)
        _same(c(x), with_item(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)
        self.scale = 2.0

    def forward(self, x):
        h = F.gelu(self.a(x)) * self.scale + 1.0
        if h.mean() > 0:
            h = h * 0.5
        return self.b(h).sigmoid() * 3 - 1


def test_module_forward_splits_and_keeps_gradients_and_guards():
    tl.manual_seed(0)
    m = Model()
    mc = tl.compile(m)
    x = tl.randn(5, 8, requires_grad=True)
    ye, yc = m(x), mc(x)
    _same(yc, ye)
    ge, = tl.autograd.grad(ye.sum(), x)
    gc, = tl.autograd.grad(yc.sum(), x)
    _same(gc, ge)
    # the pieces guard the module's attributes as the whole graph did
    m.scale = -3.0
    _same(mc(x), m(x))
    e = dynamo.explain(m)(x)
    assert e.graph_count == 2 and e.graph_break_count == 1
    # parameter gradients through both pieces
    m.zero_grad()
    m(x).square().sum().backward()
    want = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    mc(x).square().sum().backward()
    for p, w in zip(m.parameters(), want):
        _same(p.grad, w)


tl.manual_seed(1)
_net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
_opt = tl.optim.SGD(_net.parameters(), lr=0.1)


def train_step(x, y):
    _opt.zero_grad()
    loss = F.mse_loss(_net(x), y)
    loss.backward()
    _opt.step()
    return loss.detach() * 1.0


def test_a_training_step_with_backward_and_step_inside_splits_twice():
    import copy
    ref = copy.deepcopy(_net)
    ref_opt = tl.optim.SGD(ref.parameters(), lr=0.1)
    c = tl.compile(train_step)
    g = tl.Generator().manual_seed(2)
    for _ in range(4):
        x, y = tl.randn(16, 4, generator=g), tl.randn(16, 1, generator=g)
        ref_opt.zero_grad()
        want = F.mse_loss(ref(x), y)
        want.backward()
        ref_opt.step()
        _same(c(x, y), want)
    for p, q in zip(_net.parameters(), ref.parameters()):
        _same(p, q)
    e = dynamo.explain(train_step)(x, y)
    # zero_grad, backward and step break; the loss and the returned value are the graphs
    assert e.graph_count == 2 and e.graph_break_count == 3, e
    assert all("train_step" in r for r in e.break_reasons), e.break_reasons


def unbound_later(x, flag):
    y = x * 2
    if flag:
        z = y + 1
    print(end="")
    return z * y


def test_a_variable_the_breaking_statement_may_not_bind_is_unbound_after_it_too():
    c = tl.compile(unbound_later)
    x = tl.randn(3)
    _same(c(x, True), unbound_later(x, True))
    with pytest.raises(UnboundLocalError):
        unbound_later(x, False)
    with pytest.raises(UnboundLocalError):
        c(x, False)


def raising_after(x):
    y = x.exp()
    print(end="")
    return y[10]


def test_a_traceback_from_a_piece_points_at_the_users_line():
    c = tl.compile(raising_after)
    with pytest.raises(IndexError) as info:
        c(tl.randn(3))
    frames = traceback.extract_tb(info.value.__traceback__)
    assert any(f.filename == __file__ and f.line == "return y[10]" for f in frames), frames


def early_return(x, n):
    if n > 2:
        return x + 1
    y = x * 2
    print(end="")
    return y.exp()


def closure_maker():
    k = 3.0

    def inner(x):
        y = x * k
        print(end="")
        return y + 1
    return inner


@pytest.mark.parametrize("fn,args", [(early_return, (tl.randn(3), 1)), (early_return, (tl.randn(3), 5)),
                                     (closure_maker(), (tl.randn(3),))])
def test_functions_that_cannot_be_split_run_eagerly(fn, args):
    c = tl.compile(fn)
    _same(c(*args), fn(*args))


def in_a_loop(x):
    y = x * 2
    for i in range(3):
        if y.sum() > 0:
            y = y - 1
        else:
            y = y + 1
    return y.sin() + x


def test_a_break_inside_a_loop_runs_the_loop_eagerly():
    c = tl.compile(in_a_loop)
    for _ in range(3):
        x = tl.randn(6)
        _same(c(x), in_a_loop(x))


def helper(t):
    if t.max() > 0:
        return t * 2
    return t


def calls_a_breaking_helper(x):
    a = (x * 3).tanh()
    b = helper(a)
    return (b + a).exp()


def test_a_break_in_a_called_function_splits_the_compiled_one_at_the_call():
    c = tl.compile(calls_a_breaking_helper)
    for s in (1.0, -1.0):
        x = tl.full((5,), s)
        _same(c(x), calls_a_breaking_helper(x))
    e = dynamo.explain(calls_a_breaking_helper)(tl.ones(5))
    assert e.graph_count == 2


def test_fullgraph_still_raises():
    with pytest.raises(dynamo.exc.Unsupported):
        tl.compile(with_print, fullgraph=True)(tl.randn(2), tl.randn(2))


def test_pieces_fuse_their_elementwise_chains():
    c = tl.compile(with_print)
    x, y = tl.randn(64), tl.randn(64)
    with contextlib.redirect_stdout(io.StringIO()):
        c(x, y)
    entry = next(iter(c._compiled.cache.values())) if hasattr(c, "_compiled") \
        else next(iter(c.cache.values()))
    assert kernels_of(entry.pre) and kernels_of(entry.post)


def test_a_source_file_edited_after_the_import_is_not_split_from_its_new_text(tmp_path, monkeypatch):
    import importlib
    import os
    import sys
    path = tmp_path / "edited_after_import.py"
    path.write_text("def f(x):\n    y = x * 2\n    print(end='')\n    return y + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("edited_after_import")
    try:
        path.write_text("def f(x):\n    y = x * 2\n    print(end='')\n    return y + 100\n")
        st = os.stat(path)
        os.utime(path, (st.st_atime + 5, st.st_mtime + 5))
        x = tl.randn(3)
        _same(tl.compile(mod.f)(x), x * 2 + 1)          # the code that was loaded
    finally:
        sys.modules.pop("edited_after_import", None)
