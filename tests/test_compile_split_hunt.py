"""Hunting wrong answers caused by splitting a compiled function at a graph break
(torchlite/compiler/_split.py): each case runs compiled and eagerly on the same inputs and
compares values, gradients, printed output, mutated inputs and state, and exceptions."""
import contextlib
import copy
import io
import pickle
import threading
import traceback
import types

import numpy as np
import pytest

import torchlite as tl
import torchlite._dynamo as dynamo
import torchlite.nn as nn
import torchlite.nn.functional as F
from compile_helpers import fresh_compiler  # noqa: F401


def _same(a, b):
    if isinstance(a, tl.Tensor):
        assert isinstance(b, tl.Tensor) and type(b) is type(a), (type(a), type(b))
        assert a.dtype == b.dtype and a.shape == b.shape, (a, b)
        np.testing.assert_allclose(a.detach().float().numpy(), b.detach().float().numpy(),
                                   rtol=1e-5, atol=1e-6)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert type(a) is type(b) and a.keys() == b.keys(), (a, b)
        for k in a:
            _same(a[k], b[k])
    else:
        assert type(a) is type(b) and a == b, (a, b)


def _copy(v):
    return v.detach().clone().requires_grad_(v.requires_grad) if isinstance(v, tl.Tensor) else copy.deepcopy(v)


def _run(fn, args):
    """fn(*args): (result or exception, printed text)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            return fn(*args), out.getvalue()
    except Exception as e:
        return e, out.getvalue()


def check(fn, make_args, calls=4, **compile_kwargs):
    """fn compiled against fn eager over `calls` calls of make_args(i): results or exception
    types, printed output and the inputs as the calls left them."""
    c = tl.compile(fn, **compile_kwargs)
    for i in range(calls):
        args = make_args(i)
        ea, ca = [_copy(a) for a in args], [_copy(a) for a in args]
        want, want_out = _run(fn, ea)
        got, got_out = _run(c, ca)
        assert got_out == want_out, (i, got_out, want_out)
        if isinstance(want, Exception) or isinstance(got, Exception):
            assert type(got) is type(want), (i, got, want)
        else:
            _same(got, want)
        for a, b in zip(ca, ea):
            _same(a, b)
    return c


def randn(*shape, scale=1.0):
    return lambda i: (tl.randn(*shape) * scale,)


# ---- variables the pieces hand on -------------------------------------------------------------
def deleted_in_a_branch_before(x, drop):
    y = x * 2
    if drop:
        del y
    print(end="")
    if not drop:
        return y
    return x + 1


def deleted_in_the_breaking_statement(x):
    y = x * 2
    if x.sum() > 100:
        pass
    else:
        del y
    return y


def unbound_by_except(x):
    y = x * 2
    try:
        print("in try")
        raise ValueError
    except ValueError as y:  # noqa: F841 (Python unbinds y when the handler ends)
        pass
    return y


@pytest.mark.parametrize("fn,make", [
    (deleted_in_a_branch_before, lambda i: (tl.randn(3), i % 2 == 0)),
    (deleted_in_the_breaking_statement, randn(3)),
    (unbound_by_except, randn(3)),
])
def test_a_name_deleted_in_a_branch_or_unbound_by_except_is_unbound_as_in_eager(fn, make):
    # it was taken as bound: the first piece returned it (UnboundLocalError where eager had
    # none), or the last piece got the <unbound> marker as its value (no UnboundLocalError)
    check(fn, make)


def namespace_made_before(x):
    ns = types.SimpleNamespace(k=1)
    y = x * 2
    print(ns.k)
    ns.k += 1
    return y * ns.k


def function_handed_on(x):
    act = F.relu
    y = x * 2
    print("between")
    return act(y) + 1


def set_made_before(x):
    seen = set()
    y = x * 2
    seen.add(round(y.sum().item(), 4))
    return y * len(seen)


@pytest.mark.parametrize("fn", [namespace_made_before, function_handed_on, set_made_before])
def test_objects_made_before_the_break_are_new_on_every_call(fn):
    # the first graph returned the capture's object as a constant: the same namespace every
    # call (the breaking statement's changes piled up), and the capture's recording stand-in
    # of F.relu, which then returned a proxy
    c = check(fn, randn(4), calls=4)
    assert isinstance(c(tl.randn(4)), tl.Tensor)


def containers_across(x):
    log, d = [], {"n": [1]}
    outs = [x * 2]
    if x.sum() > 0:
        log.append(1)
        d["n"].append(2)
        outs.append(x + 1)
    else:
        outs.append(x - 1)
    log.append(len(outs))
    return outs[0] * len(log) + outs[-1] * len(d["n"]), log, d


def test_lists_and_dicts_built_before_are_the_ones_the_breaking_statement_and_after_see():
    check(containers_across, lambda i: (tl.randn(3) + (1 if i % 2 else -1),), calls=5)


def uses_locals(x):
    a = x * 2
    print("p")
    b = a + 1
    return sorted(locals()), b


def test_a_function_reading_its_locals_whole_is_not_split():
    # post saw only its share of the variables
    check(uses_locals, randn(3))


# ---- methods of plain objects -------------------------------------------------------------------
class Counter:
    def __init__(self):
        self.f = 2.0

    def bump_in_break(self, x):
        y = x * self.f
        if y.sum() > -1e9:
            self.f += 1
        return y * self.f

    def bump_after(self, x):
        y = x * self.f
        print("meth", self.f)
        self.f += 1
        print("after", self.f)
        return y * self.f

    def plain(self, x):
        return x * self.f


@pytest.mark.parametrize("name", ["bump_in_break", "bump_after"])
def test_a_method_of_a_plain_object_sees_its_attributes_as_the_breaking_statement_left_them(name):
    # bump_in_break: the graph after the break kept self.f of its capture; bump_after: the
    # graph after the break did `self.f += 1` at its capture only (twice on the first call,
    # then never)
    eager, compiled = Counter(), Counter()
    c = tl.compile(getattr(compiled, name))
    for _ in range(4):
        x = tl.randn(3)
        want, want_out = _run(getattr(eager, name), (x,))
        got, got_out = _run(c, (x,))
        assert got_out == want_out
        _same(got, want)
        assert compiled.f == eager.f


def test_a_compiled_method_of_a_plain_object_guards_its_attributes():
    k = Counter()
    c = tl.compile(k.plain)
    x = tl.ones(2)
    _same(c(x), x * 2.0)
    k.f = 5.0
    _same(c(x), x * 5.0)


# ---- where the break is ------------------------------------------------------------------------
def break_first(x):
    print("first")
    return x * 2


def break_last(x):
    y = x * 2
    print(bool(y.sum() > 0))


def docstring_first(x: tl.Tensor) -> tl.Tensor:
    """The docstring is the first statement."""
    y: tl.Tensor = x + 1
    print("x")
    return y + 1


def several_breaks(x):
    a = x * 2
    print("a")
    b = a + 1
    s = b.sum().item()
    c = b * s
    if c.sum() > 0:
        c = c + 1
    return c, s


def returns_in_branches(x):
    y = x * 2
    if y.sum() > 0:
        if y.max() > 1:
            return y + 1
        else:
            return y - 1
    elif y.sum() < -1:
        return y * 3
    z = y.exp()
    return z


def returns_none_or_prints(x):
    y = x * 2
    if y.sum() > 0:
        return
    print("no")


def return_in_a_loop(x):
    y = x * 2
    for i in range(5):
        if y[i] > 0:
            return y * i
    return y


def while_on_data(x):
    y = x * 2
    n = 0
    while y.abs().sum() > 1:
        y = y / 2
        n += 1
    return y * n, n


def try_finally(x):
    y = x * 2
    try:
        s = y.sum().item()
        if s > 0:
            raise ValueError
        r = y + 1
    except ValueError:
        r = y - 1
    finally:
        print("finally")
    return r * 2


def assigned_in_a_branch(x):
    y = x * 2
    if y.sum() > 0:
        z = y + 1
    return z


def branch_first(x):
    if x.sum() > 0:
        return x
    y = x * 2
    return y


def return_of_item(x):
    y = x * 2
    return y.sum().item() + 1


def walrus_and_unpacking(x):
    a, (b, c) = x * 1, (x * 2, x * 3)
    *rest, last = [a, b, c]
    if (s := last.sum()) > 0:
        y = s * 2
    else:
        y = s * 3
    return rest[0] + y + (t := b * 2), t


def comprehension_and_fstring(x):
    k = 3
    ys = [x * i for i in range(k)]
    print(f"{x.sum():.3f}", x.shape, x.dtype)
    return sum(y * k for y in ys)


def tolist_then_numbers(x):
    y = x * 2
    v = y.tolist()
    return x * v[0] + v[1]


@pytest.mark.parametrize("fn,make", [
    (break_first, randn(3)), (break_last, randn(3)), (docstring_first, randn(3)),
    (several_breaks, randn(4)), (returns_in_branches, lambda i: (tl.randn(3) * (i - 2),)),
    (returns_none_or_prints, randn(3)), (return_in_a_loop, randn(5)),
    (while_on_data, lambda i: (tl.randn(5) * (i + 1),)), (try_finally, randn(5)),
    (assigned_in_a_branch, randn(5)), (branch_first, randn(3)), (return_of_item, randn(3)),
    (walrus_and_unpacking, randn(3)), (comprehension_and_fstring, randn(3)),
    (tolist_then_numbers, randn(3)),
])
def test_control_flow_around_the_break_matches_eager(fn, make):
    check(fn, make, calls=6)


def item_each_call(x):
    y = x * 2
    s = y.sum().item()
    z = y * s
    s2 = z.mean().item()
    return z + s2 + s


def test_item_values_are_right_on_every_call_past_the_cache_limit():
    with pytest.warns(UserWarning, match="cache_size_limit"):
        check(item_each_call, randn(3), calls=12)


# ---- in-place ops, views and aliases across the pieces -------------------------------------
def inplace_on_input(x):
    x.mul_(2)
    print("p")
    x += 1
    return x + 1


def augmented_on_local(x):
    y = x * 1
    y += 1
    print("p")
    y += 2
    return y


def view_written_in_the_break(x):
    v = x[0]
    w = x.t()
    if v.sum() > -100:
        v.mul_(2)
        w[1].add_(1)
    return x * 1


def aliases(x):
    a = x * 2
    b = a
    c = x
    lst = [a, x]
    if a.sum() > -100:
        b.add_(1)
        lst[1].mul_(3)
    c.add_(1)
    return a, b, lst[0], lst[1], c


def input_changed_in_the_break(x):
    y = x.exp()
    x.add_(y.sum().item())
    return x


@pytest.mark.parametrize("fn,make", [
    (inplace_on_input, randn(3)), (augmented_on_local, randn(3)),
    (view_written_in_the_break, randn(3, 3)), (aliases, randn(3)),
    (input_changed_in_the_break, randn(3)),
])
def test_in_place_writes_reach_the_same_tensors_as_in_eager(fn, make):
    check(fn, make)


# ---- gradients, grad mode, RNG, modules -------------------------------------------------------
def grads_through(x, w):
    h = (x @ w).tanh()
    print("m")
    s = h.sum()
    if s > 0:
        h = h * s
    else:
        h = h - s
    return (h * w.sum()).square().mean()


def test_gradients_flow_from_before_through_the_break_into_after():
    c = tl.compile(grads_through)
    for _ in range(3):
        x, w = tl.randn(4, 3, requires_grad=True), tl.randn(3, 3, requires_grad=True)
        with contextlib.redirect_stdout(io.StringIO()):
            want, got = grads_through(x, w), c(x, w)
        _same(got, want)
        _same(tl.autograd.grad(got, (x, w)), tl.autograd.grad(want, (x, w)))


def grad_modes(x):
    with tl.no_grad():
        y = x * 2
    print("ng")
    z = y * x
    with tl.enable_grad():
        w = z * x
    tl.set_grad_enabled(False)
    print("off")
    v = w * 3
    tl.set_grad_enabled(True)
    return w, v


def test_grad_mode_blocks_and_switches_around_breaks():
    c = tl.compile(grad_modes)
    for outer in (True, False):
        x = tl.randn(3, requires_grad=True)
        modes = []
        with contextlib.redirect_stdout(io.StringIO()):
            for f in (grad_modes, c):
                with tl.set_grad_enabled(outer):
                    modes.append((f(x), tl.is_grad_enabled()))
        (want, want_mode), (got, got_mode) = modes
        assert got_mode == want_mode
        _same(got, want)
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]


def random_pieces(x):
    a = tl.rand(3) + F.dropout(x, 0.3)
    s = a.sum().item()
    return F.dropout(a * s, 0.5) + tl.randn(3)


def test_random_draws_before_and_after_the_break_follow_eagers_stream():
    c = tl.compile(random_pieces)
    x = tl.randn(3)
    tl.manual_seed(3)
    want = [random_pieces(x) for _ in range(3)] + [tl.rand(2)]
    tl.manual_seed(3)
    got = [c(x) for _ in range(3)] + [tl.rand(2)]
    _same(got, want)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.bn, self.l2 = nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1)
        self.scale = 1.0

    def forward(self, x, *extra, k=1.0, **kw):
        h = self.bn(self.l1(x)).relu() * self.scale * k
        h = F.dropout(h, 0.1, self.training)
        if h.mean() > 0.3:
            h = self.bn(h * 0.5)
        for e in extra:
            h = h + e
        return self.l2(h) + kw.get("bias", 0.0)


def test_a_training_loop_with_a_split_forward_matches_eager():
    tl.manual_seed(0)
    net = Net()
    ref = copy.deepcopy(net)
    nc = tl.compile(net)
    opt, ropt = tl.optim.Adam(net.parameters(), lr=0.01), tl.optim.Adam(ref.parameters(), lr=0.01)
    g = tl.Generator().manual_seed(1)
    for step in range(5):
        x, y = tl.randn(16, 4, generator=g), tl.randn(16, 1, generator=g)
        if step == 3:
            net.eval()
            ref.eval()
        for f, o in ((ref, ropt), (nc, opt)):
            o.zero_grad(set_to_none=False)
            tl.manual_seed(step)
            for k in range(2):                  # gradient accumulation
                loss = F.mse_loss(f(x[k::2]), y[k::2]) / 2
                loss.backward()
            o.step()
        for p, q in zip(list(net.parameters()) + list(net.buffers()),
                        list(ref.parameters()) + list(ref.buffers())):
            _same(p, q)


@pytest.mark.filterwarnings("ignore:.*cache_size_limit")
def test_module_state_arguments_and_hooks_after_a_split():
    tl.manual_seed(0)
    m = Net().eval()
    mc = tl.compile(m)
    x = tl.randn(2, 4)
    for i in range(4):
        if i == 1:
            m.scale = 3.0
        if i == 2:
            m.l2 = nn.Linear(8, 1)
        if i == 3:
            m.train()
            tl.manual_seed(5)
        state = tl.get_rng_state()
        for args, kwargs in (((x,), {}), ((x, x[:, :1].expand(2, 8)), {"k": 2.0}), ((x,), {"bias": 1.0})):
            tl.set_rng_state(state)
            want = m(*args, **kwargs)
            tl.set_rng_state(state)
            _same(mc(*args, **kwargs), want)
    m.eval()
    calls = []
    handle = m.l1.register_forward_hook(lambda mod, i, o: calls.append(1))
    _same(mc(x), m(x))
    assert calls == [1, 1]
    handle.remove()


def test_deepcopy_pickle_and_reset_of_a_split_module():
    tl.manual_seed(0)
    m = Net().eval()
    mc = tl.compile(m)
    x = tl.randn(3, 4)
    _same(mc(x), m(x))
    for other in (copy.deepcopy(mc), pickle.loads(pickle.dumps(mc))):
        _same(other(x), m(x))
    tl.compiler.reset()
    _same(mc(x), m(x))


@pytest.mark.filterwarnings("ignore:.*cache_size_limit")
def test_threads_call_a_split_function_and_module_at_once():
    tl.manual_seed(0)
    m = Net().eval()
    mc, fc = tl.compile(m), tl.compile(item_each_call)
    xs = [tl.randn(2, 4) * (1 if i % 2 else -1) for i in range(8)]
    got = [None] * 8

    def work(i):
        for _ in range(3):
            got[i] = (mc(xs[i]), fc(xs[i][0]))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        _same(got[i], (m(xs[i]), item_each_call(xs[i][0])))


def raises_in_the_break(x):
    y = x * 2
    if y.sum() > -1e9:
        raise KeyError("boom")
    return y


def test_an_exception_in_the_breaking_statement_keeps_its_type_and_line():
    c = tl.compile(raises_in_the_break)
    for _ in range(2):
        with pytest.raises(KeyError) as info:
            c(tl.randn(3))
        assert traceback.extract_tb(info.value.__traceback__)[-1].line == 'raise KeyError("boom")'


def print_then_branch(x):
    y = x * 2
    print("a")
    z = y + 1
    if z.sum() > 0:
        z = z * 2
    return z.sin()


@pytest.mark.parametrize("fn,counts", [(print_then_branch, (3, 2)), (several_breaks, (4, 3))])
def test_explain_counts_graphs_and_breaks_as_pytorch_does(fn, counts):
    # torch._dynamo.explain of the same code (torch 2.13) gives these counts
    with contextlib.redirect_stdout(io.StringIO()):
        e = dynamo.explain(fn)(tl.randn(3))
    assert (e.graph_count, e.graph_break_count) == counts, e


class Private(nn.Module):
    def __init__(self):
        super().__init__()
        self.__k = 2.0
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x) * self.__k
        print("p")
        return h * self.__k


def test_a_method_naming_a_private_attribute_is_not_split():
    # its class mangled self.__k to self._Private__k; the pieces, compiled outside the class,
    # looked up self.__k and raised AttributeError
    m = Private()
    x = tl.randn(2, 3)
    with contextlib.redirect_stdout(io.StringIO()):
        _same(tl.compile(m)(x), m(x))


class ChildWithBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, h):
        h = self.bn(h)
        if h.sum() > 0:
            h = h * 2
        return self.bn(h)


def test_a_break_in_a_child_module_updates_batchnorm_as_often_as_eager():
    tl.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), ChildWithBreak(), nn.Linear(4, 2))
    ref = copy.deepcopy(m)
    mc = tl.compile(m)
    for _ in range(4):
        x = tl.randn(5, 4)
        _same(mc(x), ref(x))
        for a, b in zip(m.buffers(), ref.buffers()):
            _same(a, b)
