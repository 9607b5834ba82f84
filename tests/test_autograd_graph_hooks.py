"""torchlite.autograd.graph's hooks: saved_tensors_hooks / save_on_cpu /
disable_saved_tensors_hooks (pack and unpack really called, values round-trip, double
backward still reaches the original graph), register_multi_grad_hook, the Node API, and
Module.register_backward_hook (the deprecated form); against PyTorch where installed."""
import threading
import warnings

import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd.graph import (Node, disable_saved_tensors_hooks, increment_version,
                                      register_multi_grad_hook, save_on_cpu, saved_tensors_hooks)

XN = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])
YN = np.array([[1.5, 0.2, -0.3], [-0.8, 0.9, 0.6]])

# ops whose saved tensors PyTorch and torchlite count alike: (name, f(lib, x, y))
OPS = [
    ("exp", lambda L, x, y: x.exp()),                   # saves its result
    ("sin", lambda L, x, y: x.sin()),                   # saves its input
    ("mul", lambda L, x, y: x * y),                     # both inputs (built inline: elementwise_grad)
    ("div", lambda L, x, y: x / y),
    ("tanh", lambda L, x, y: x.tanh()),
    ("mm", lambda L, x, y: x @ y.t()),
    ("pow", lambda L, x, y: x ** 2),
    ("add", lambda L, x, y: x + y),                     # saves nothing
    ("softmax", lambda L, x, y: L.softmax(x, 1)),
    ("linear", lambda L, x, y: L.nn.functional.linear(x, y)),
    ("where", lambda L, x, y: L.where(x > 0, x, y)),
]


def counting_hooks():
    counts = {"pack": 0, "unpack": 0}

    def pack(t):
        counts["pack"] += 1
        return t

    def unpack(t):
        counts["unpack"] += 1
        return t
    return counts, pack, unpack


def inputs(lib=tl):
    return (lib.tensor(XN, dtype=lib.float64, requires_grad=True),
            lib.tensor(YN, dtype=lib.float64, requires_grad=True))


def grads_of(f, lib=tl, hooks=None):
    x, y = inputs(lib)
    if hooks is None:
        out = f(lib, x, y)
    else:
        with hooks:
            out = f(lib, x, y)
    return [g.numpy() if g is not None else None
            for g in lib.autograd.grad((out * out).sum(), (x, y), allow_unused=True)]


@pytest.mark.parametrize("name,f", OPS, ids=[n for n, _ in OPS])
def test_every_saved_tensor_is_packed_and_unpacked(name, f):
    counts, pack, unpack = counting_hooks()
    plain = grads_of(f)
    hooked = grads_of(f, hooks=saved_tensors_hooks(pack, unpack))
    for a, b in zip(plain, hooked):
        assert (a is None) == (b is None) and (a is None or np.array_equal(a, b))
    assert counts["pack"] == counts["unpack"]           # each saved tensor used once by backward
    if name == "add":
        assert counts["pack"] == 0
    else:
        assert counts["pack"] >= 1


def test_counts_match_torch():
    torch = pytest.importorskip("torch")
    for name, f in OPS:
        got = []
        for lib in (tl, torch):
            counts, pack, unpack = counting_hooks()
            x, y = inputs(lib)
            with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
                out = f(lib, x, y)
            out.sum().backward()
            got.append(counts)
        assert got[0] == got[1], name


def test_values_round_trip_through_any_packed_form():
    # pack to plain Python lists, unpack to new tensors: the gradients are unchanged,
    # first and second order (the unpacked tensors carry the original history)
    def f(L, x, y):
        return (x * y).sin() * x.exp()
    hooks = saved_tensors_hooks(lambda t: (t.tolist(), t.dtype),
                                lambda p: tl.tensor(p[0], dtype=p[1]))
    for a, b in zip(grads_of(f), grads_of(f, hooks=hooks)):
        np.testing.assert_allclose(b, a, rtol=1e-14)
    x, y = inputs()
    with hooks:
        out = (f(tl, x, y) ** 2).sum()
    gx, = tl.autograd.grad(out, x, create_graph=True)
    hx, = tl.autograd.grad(gx.sum(), x)
    x2, y2 = inputs()
    gx2, = tl.autograd.grad((f(tl, x2, y2) ** 2).sum(), x2, create_graph=True)
    hx2, = tl.autograd.grad(gx2.sum(), x2)
    np.testing.assert_allclose(hx.numpy(), hx2.numpy(), rtol=1e-12)


def test_hooks_own_the_value_and_nest():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tl, torch):
        x, _ = inputs(lib)
        a = x * 1
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            y = a.sin()                     # saves a copy of a
        with lib.no_grad():
            a.mul_(3)                       # no "modified by an inplace operation" error:
        g, = lib.autograd.grad(y.sum(), x)  # the copy was saved
        results.append(g.numpy())
    np.testing.assert_allclose(results[0], results[1])
    np.testing.assert_allclose(results[0], np.cos(XN))
    seen = []
    x, _ = inputs()
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t):
            x.exp()
        x.exp()
    assert seen == ["inner", "outer"]


def test_hook_errors():
    x, _ = inputs()
    with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
        with saved_tensors_hooks(lambda t: t.mul_(2), lambda t: t):
            (x * 1).exp()
    with saved_tensors_hooks(lambda t: t, lambda t: 1):
        y = x.exp()
    with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor"):
        y.sum().backward()
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="not now"):
            with disable_saved_tensors_hooks("not now"):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):      # usable again afterwards
        pass


def test_hooks_are_thread_local():
    counts, pack, unpack = counting_hooks()
    ready, done = threading.Event(), threading.Event()

    def other_thread():
        ready.wait()
        x, y = inputs()
        (x * y).sum().backward()            # saves two tensors, outside this thread's hooks
        done.set()
    t = threading.Thread(target=other_thread)
    t.start()
    with saved_tensors_hooks(pack, unpack):
        ready.set()
        done.wait(30)
    t.join()
    assert counts["pack"] == 0


def test_save_on_cpu_with_cpu_tensors():
    def f(L, x, y):
        return (x @ y.t()).tanh() * x.sum()
    plain = grads_of(f)
    for pin in (False, True):               # pin_memory falls back to a plain copy without CUDA
        for a, b in zip(plain, grads_of(f, hooks=save_on_cpu(pin_memory=pin))):
            np.testing.assert_allclose(b, a, rtol=1e-14)
    x, y = inputs()
    with save_on_cpu():
        out = x.exp()
    saved = out.grad_fn._saved_result       # unpacked through the hook: same values, same history
    assert saved.grad_fn is out.grad_fn and np.array_equal(saved.detach().numpy(), out.detach().numpy())


# ---- register_multi_grad_hook ----------------------------------------------------------------------
def test_multi_grad_hook_all_and_any():
    a = tl.tensor([1.0, 2.0], requires_grad=True)
    b = tl.tensor([3.0, 4.0], requires_grad=True)
    calls = []
    handle = register_multi_grad_hook((a, b), lambda grads: calls.append(
        [None if g is None else g.tolist() for g in grads]))
    (a * 2).sum().backward()                             # b is not reached: None
    (a * 2 + b * 5).sum().backward()
    tl.autograd.grad((a * 3).sum(), [a])                  # grad(): only a is computed
    assert calls == [[[2.0, 2.0], None], [[2.0, 2.0], [5.0, 5.0]], [[3.0, 3.0], None]]
    handle.remove()
    (a + b).sum().backward()
    assert len(calls) == 3

    firsts = []
    c = a * b                                             # a non-leaf among the tensors
    handle = register_multi_grad_hook((a, c), lambda g: firsts.append(g.tolist()), mode="any")
    (c * 10).sum().backward(retain_graph=True)            # c's gradient comes first; a's is not reported
    assert firsts == [[10.0, 10.0]]
    (a * 7).sum().backward()
    assert firsts == [[10.0, 10.0], [7.0, 7.0]]
    handle.remove()
    with pytest.raises(ValueError, match="mode"):
        register_multi_grad_hook((a, b), lambda g: None, mode="most")


def test_multi_grad_hook_like_torch():
    torch = pytest.importorskip("torch")
    logs = []
    for lib in (tl, torch):
        log = []
        a, b = inputs(lib)
        c = a.exp()
        lib.autograd.graph.register_multi_grad_hook(
            (a, b, c), lambda gs: log.append([None if g is None else g.sum().item() for g in gs]))
        (c * b).sum().backward(retain_graph=True)
        (c * 2).sum().backward()
        logs.append(log)
    assert len(logs[0]) == len(logs[1]) == 2
    for ours, theirs in zip(*logs):
        assert [g is None for g in ours] == [g is None for g in theirs]
        np.testing.assert_allclose([g for g in ours if g is not None],
                                   [g for g in theirs if g is not None], rtol=1e-12)


# ---- the Node API ------------------------------------------------------------------------------------
def test_node_api():
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    node = y.grad_fn
    assert isinstance(node, Node) and isinstance(node.next_functions[0][0], Node)
    assert node.name() == "MulBackward0"
    assert node.next_functions[0][0].variable is x
    node.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}
    seen = []
    node.register_prehook(lambda grad_outputs: seen.append(("pre", grad_outputs[0].tolist())))
    h = node.register_hook(lambda grad_inputs, grad_outputs: (grad_inputs[0] * 2, None))
    y.sum().backward(retain_graph=True)
    assert seen == [("pre", [1.0, 1.0])] and x.grad.tolist() == [6.0, 6.0]
    h.remove()
    x.grad = None
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    v = x._version
    increment_version(x)
    assert x._version == v + 1


# ---- Module.register_backward_hook (deprecated) ----------------------------------------------------
def test_module_register_backward_hook():
    torch = pytest.importorskip("torch")
    results = []
    for lib in (tl, torch):
        class Scale(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([1.0, 2.0, 3.0]))

            def forward(self, x):
                return x * self.w
        m = Scale()
        log = []
        m.register_backward_hook(lambda mod, gi, go: log.append(
            (mod is m, [g.tolist() for g in gi], [g.tolist() for g in go])))
        x = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = m(x)
        out.sum().backward()
        with pytest.raises(RuntimeError, match="Cannot use both"):
            m.register_full_backward_hook(lambda *args: None)
        results.append((log, sorted(str(w.category.__name__) for w in caught)))
    assert results[0] == results[1]
    assert results[0][0][0][0] is True
    m = tl.nn.Linear(2, 2)
    m.register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="Cannot use both"):
        m.register_backward_hook(lambda *args: None)


# ---- allow_mutation_on_saved_tensors ----------------------------------------------------------
def test_allow_mutation_on_saved_tensors_keeps_the_forward_values():
    from torchlite.autograd.graph import allow_mutation_on_saved_tensors
    with allow_mutation_on_saved_tensors() as ctx:
        assert type(ctx).__name__ == "_AllowMutationOnSavedContext"
        a = tl.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()                               # b was saved by pow: no version error here
        out.backward()
        np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())
        x = tl.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        (g,) = tl.autograd.grad((y ** 3).sum(), x, create_graph=True)
        y.mul_(0)
        g.sum().backward()                     # the second derivative 6x, from the saved copy
        np.testing.assert_allclose(x.grad.numpy(), [6.0, 12.0])
    with pytest.raises(RuntimeError, match="cannot be nested"):
        with allow_mutation_on_saved_tensors():
            with allow_mutation_on_saved_tensors():
                pass
    with allow_mutation_on_saved_tensors():
        a = tl.ones(2, requires_grad=True)
        out = (a.clone() ** 2).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors'"):
        out.backward()
    a = tl.ones(2, requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.sin_()                                   # outside the context: PyTorch's version error
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
