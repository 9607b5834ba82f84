"""Semantics of the autograd core (torchlite/autograd: graph, engine, grad modes, gradcheck,
anomaly mode) and of the Tensor's autograd API, checked against PyTorch's documented
behaviour (and against torch itself where it is installed)."""
import gc
import math
import re
import threading
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import GradcheckError, gradcheck, gradgradcheck
from torchlite._core import array as _A

F64 = tl.float64


def leaf(values, dtype=F64):
    return tl.tensor(values, dtype=dtype, requires_grad=True)


# ---- requires_grad, leaves, grad_fn ---------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: tl.tensor([1.0, 2.0], requires_grad=True),
    lambda: tl.zeros(2, requires_grad=True),
    lambda: tl.ones(2, 3, requires_grad=True),
    lambda: tl.empty(2, requires_grad=True),
    lambda: tl.full((2,), 1.5, requires_grad=True),
    lambda: tl.randn(2, requires_grad=True),
    lambda: tl.arange(3.0, requires_grad=True),
    lambda: tl.zeros_like(tl.ones(2), requires_grad=True),
    lambda: tl.tensor([1.0, 2.0]).requires_grad_(),
])
def test_requires_grad_on_creation(make):
    t = make()
    assert t.requires_grad and t.is_leaf and t.grad_fn is None and t.grad is None


def test_requires_grad_setter_and_method():
    x = tl.tensor([1.0, 2.0])
    assert not x.requires_grad and x.is_leaf
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    x.requires_grad_(True)
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.requires_grad_(True) is y                  # a no-op on a non-leaf, as in PyTorch
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf variables\.$"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match="If you want to use a computed variable in a subgraph "
                                           "that doesn't require differentiation use var_no_grad"):
        y.requires_grad_(False)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        tl.tensor([1, 2]).requires_grad_()


def test_grad_of_a_non_leaf_warns_as_pytorch():
    import warnings
    x = leaf([1.0, 2.0])
    y = x * 2
    with pytest.warns(UserWarning, match="not a leaf Tensor is being accessed.*retain_grad"):
        assert y.grad is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # none of these warn
        assert x.grad is None                    # a leaf
        z = x * 3
        z.retain_grad()
        z.sum().backward()
        assert z.grad is not None and x.grad is not None
        assert tl.tensor([1.0]).grad is None     # a tensor outside the graph


def test_grad_assignment_is_checked():
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = [1.0, 2.0]
    with pytest.raises(RuntimeError, match=r"gradient of size '\[3\]' to a tensor of size '\[2\]'"):
        x.grad = tl.ones(3, dtype=F64)
    with pytest.raises(RuntimeError, match="gradient with dtype 'torchlite.float32'"):
        x.grad = tl.ones(2)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    x.grad = tl.ones(2, dtype=F64)
    (x * x).sum().backward()                      # accumulates into the assigned gradient
    assert x.grad.tolist() == [3.0, 5.0]
    del x.grad
    assert x.grad is None


def test_propagation_and_is_leaf():
    x, c = leaf([1.0, 2.0]), tl.tensor([3.0, 4.0], dtype=F64)
    y = x * c
    z = c * c
    assert y.requires_grad and not y.is_leaf
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None
    with tl.no_grad():
        w = x * c
    assert not w.requires_grad and w.is_leaf


def test_grad_fn_names_and_next_functions():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = (x * w + 1).exp()
    assert re.fullmatch(r"<ExpBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    assert y.grad_fn.name() == "ExpBackward0"
    add = y.grad_fn.next_functions[0][0]
    assert add.name() == "AddBackward0" and add.next_functions[1] == (None, 0)
    mul = add.next_functions[0][0]
    assert mul.name() == "MulBackward0"
    (ax, nx), (aw, nw) = mul.next_functions
    assert ax.name() == "AccumulateGrad" and ax.variable is x and nx == 0
    assert aw.variable is w
    assert mul.next_functions[0][0] is (x * 3).grad_fn.next_functions[0][0]   # one per leaf
    torch = pytest.importorskip("torch")
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = (tx * torch.tensor([3.0, 4.0]) + 1).exp()
    assert ty.grad_fn.name() == y.grad_fn.name()
    assert ty.grad_fn.next_functions[0][0].name() == add.name()


def test_saved_tensors_visible_on_the_node():
    x = leaf([1.0, 2.0])
    y = x.exp()
    assert y.grad_fn._saved_result.tolist() == y.tolist()
    z = x.sin()
    assert z.grad_fn._saved_self is x
    z.backward(tl.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        z.grad_fn._saved_self


# ---- .grad accumulation ---------------------------------------------------------------------------
def test_grad_is_none_then_accumulates_in_place():
    x = leaf([1.0, 2.0])
    assert x.grad is None
    (x * 3).backward(tl.ones(2, dtype=F64))
    g = x.grad
    assert g.tolist() == [3.0, 3.0] and not g.requires_grad
    (x * x).backward(tl.ones(2, dtype=F64))
    assert x.grad is g and g.tolist() == [5.0, 7.0]          # accumulated into the same tensor
    x.grad = None
    (x * 2).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [2.0, 2.0]


def test_plain_backward_adds_in_place_into_a_grad_made_with_create_graph():
    # PyTorch's AccumulateGrad: without create_graph, .grad += new in place, even when .grad
    # has a history; the .grad object stays the same
    x = leaf([1.0, 2.0, 3.0])
    (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.tolist() == [3.0, 12.0, 27.0]
    (x ** 2).sum().backward()
    assert x.grad is g and g.tolist() == [5.0, 16.0, 33.0]
    # with create_graph again it is x.grad + new, out of place, keeping the history
    (x ** 2).sum().backward(create_graph=True)
    assert x.grad is not g and x.grad.requires_grad and x.grad.tolist() == [7.0, 20.0, 39.0]
    # a .grad set to a leaf that requires grad is added into in place as well
    y = leaf([1.0, 2.0])
    y.grad = tl.ones(2, dtype=F64, requires_grad=True)
    h = y.grad
    (y * 3).sum().backward()
    assert y.grad is h and h.tolist() == [4.0, 4.0]


def test_first_grad_is_a_copy_of_the_gradient_passed():
    x = leaf([1.0, 2.0])
    g = tl.tensor([5.0, 6.0], dtype=F64)
    x.backward(g)
    assert x.grad.tolist() == [5.0, 6.0]
    x.backward(g)
    assert g.tolist() == [5.0, 6.0] and x.grad.tolist() == [10.0, 12.0]


def test_grad_has_the_layout_of_its_leaf():
    x = tl.randn(3, 4, dtype=F64, requires_grad=True)
    (x.t() * 2).backward(tl.ones(4, 3, dtype=F64))        # the incoming gradient is transposed
    assert x.grad.stride() == (4, 1) and x.grad.tolist() == [[2.0] * 4] * 3
    y = tl.randn(4, 3, dtype=F64).t().detach().requires_grad_()
    (y * 3).backward(tl.ones(3, 4, dtype=F64))
    assert y.grad.stride() == y.stride() == (1, 3) and y.grad.tolist() == [[3.0] * 4] * 3


def test_create_graph_grad_keeps_history():
    x = leaf([1.0, 2.0])
    (x ** 3).backward(tl.ones(2, dtype=F64), create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    first = x.grad
    (x ** 2).backward(tl.ones(2, dtype=F64), create_graph=True)
    assert x.grad is not first and x.grad.tolist() == [5.0, 16.0]
    g2, = tl.autograd.grad(x.grad, x, tl.ones(2, dtype=F64))
    assert g2.tolist() == [8.0, 14.0]                        # 6x + 2


# ---- Tensor.backward / autograd.backward ---------------------------------------------------------------
def test_implicit_gradient_only_for_one_element_outputs():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        (x * 2).backward()
    s = leaf([3.0])
    (s * s).backward()
    assert s.grad.tolist() == [6.0]
    t = tl.tensor(2.0, dtype=F64, requires_grad=True)
    (t * t * t).backward()
    assert t.grad.item() == 12.0


def test_backward_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        tl.tensor([1.0]).backward()
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                                           r"torchlite.Size\(\[3\]\) "
                                           r"and output\[0\] has a shape of torchlite.Size\(\[2\]\)"):
        (x * 2).backward(tl.ones(3, dtype=F64))
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be empty."):
        (x * 2).backward(tl.ones(2, dtype=F64), inputs=[])
    with pytest.raises(TypeError):
        (x * 2).backward([1.0, 1.0])


def test_backward_inputs_restricts_accumulation():
    x, w = leaf([3.0, 2.0]), leaf([1.0, 5.0])
    y = x * 2
    y.register_hook(lambda g: g * 10)
    (y * w).backward(tl.ones(2, dtype=F64), inputs=[x])
    assert x.grad.tolist() == [20.0, 100.0] and w.grad is None
    y2 = x * 2
    (y2 * w).backward(tl.ones(2, dtype=F64), inputs=[y2])    # a non-leaf input gets .grad
    assert y2.grad.tolist() == [1.0, 5.0] and x.grad.tolist() == [20.0, 100.0]


def test_autograd_backward_several_roots():
    x = leaf([3.0, 2.0])
    tl.autograd.backward([x * x, x * 3], [tl.ones(2, dtype=F64), tl.ones(2, dtype=F64)])
    assert x.grad.tolist() == [9.0, 7.0]
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        tl.autograd.backward([x * x, x * 3], [tl.ones(2, dtype=F64)])


def test_backward_through_shared_subgraph_runs_each_node_once():
    x = leaf([1.0, 2.0])
    calls = []
    y = x.exp()
    y.grad_fn.register_prehook(lambda grads: calls.append(grads[0].tolist()))
    (y * 2 + y * 3 + y).backward(tl.ones(2, dtype=F64))
    assert len(calls) == 1 and calls[0] == [6.0, 6.0]
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp([1.0, 2.0]))


# ---- autograd.grad ------------------------------------------------------------------------------------
def test_grad_returns_without_touching_dot_grad():
    x, w = leaf([3.0, 2.0]), leaf([1.0, 5.0])
    gx, gw = tl.autograd.grad(x * w, [x, w], tl.ones(2, dtype=F64))
    assert gx.tolist() == [1.0, 5.0] and gw.tolist() == [3.0, 2.0]
    assert x.grad is None and w.grad is None and not gx.requires_grad


def test_grad_unused_inputs():
    x, w = leaf([3.0, 2.0]), leaf([1.0, 5.0])
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been "
                                           "used in the graph. Set allow_unused=True"):
        tl.autograd.grad(x * x, [x, w], tl.ones(2, dtype=F64))
    gx, gw = tl.autograd.grad(x * x, [x, w], tl.ones(2, dtype=F64), allow_unused=True)
    assert gx.tolist() == [6.0, 4.0] and gw is None
    gx, gw = tl.autograd.grad(x * x, [x, w], tl.ones(2, dtype=F64), materialize_grads=True)
    assert gw.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when materialize_grads=True"):
        tl.autograd.grad(x * x, [x, w], tl.ones(2, dtype=F64), allow_unused=False, materialize_grads=True)


def test_grad_errors_and_retain_graph():
    x = leaf([3.0, 2.0])
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        tl.autograd.grad(tl.ones(2) * 2, x, tl.ones(2))
    with pytest.raises(RuntimeError, match="One of the differentiated Tensors does not require grad"):
        tl.autograd.grad(x * 2, tl.ones(2), tl.ones(2, dtype=F64))
    y = x * x
    tl.autograd.grad(y, x, tl.ones(2, dtype=F64), retain_graph=True)
    g, = tl.autograd.grad(y, x, tl.ones(2, dtype=F64))
    assert g.tolist() == [6.0, 4.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        tl.autograd.grad(y, x, tl.ones(2, dtype=F64))


def test_grad_of_intermediate_and_repeated_inputs():
    a = leaf([1.0, 2.0])
    b = a * 2
    c = b * 3
    ga, gb, ga2 = tl.autograd.grad(c, [a, b, a], tl.ones(2, dtype=F64))
    assert ga.tolist() == [6.0, 6.0] and gb.tolist() == [3.0, 3.0] and ga2.tolist() == [6.0, 6.0]
    hooks = []
    b2 = a * 2
    b2.register_hook(lambda g: hooks.append(1) or g * 10)
    g, = tl.autograd.grad(b2 * 3, b2, tl.ones(2, dtype=F64))
    assert g.tolist() == [30.0, 30.0] and hooks == [1]        # hooks run before the capture


def test_grad_only_runs_the_part_of_the_graph_it_needs():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    ran = []
    u = w.exp()
    u.grad_fn.register_prehook(lambda g: ran.append("exp"))
    y = x * 2 + u
    tl.autograd.grad(y, x, tl.ones(2, dtype=F64))
    assert ran == []
    tl.autograd.grad(x * 2 + u, w, tl.ones(2, dtype=F64))
    assert ran == ["exp"]


def test_grad_batched():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    vs = tl.eye(3, dtype=F64)
    jac, = tl.autograd.grad(y, x, vs, is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), np.diag([2.0, 4.0, 6.0]))


# ---- freeing the graph ----------------------------------------------------------------------------
SECOND_TIME = ("Trying to backward through the graph a second time (or directly access saved tensors "
               "after they have already been freed). Saved intermediate values of the graph are freed "
               "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
               "backward through the graph a second time or if you need to access saved tensors after "
               "calling backward.")


def test_second_backward_raises_pytorch_error():
    x = leaf([3.0])
    y = (x * x).exp()
    y.backward()
    with pytest.raises(RuntimeError) as err:
        y.backward()
    assert str(err.value) == SECOND_TIME
    z = (x * x).exp()
    z.backward(retain_graph=True)
    z.backward()
    assert x.grad.item() == pytest.approx(3 * 6 * math.exp(9))     # three backwards of exp(x^2)


def test_nodes_without_saved_tensors_can_run_twice():
    x = leaf([3.0])
    y = x + x                   # as PyTorch: nothing was saved, nothing is freed
    y.backward()
    y.backward()
    assert x.grad.tolist() == [4.0]


# ---- higher-order gradients ------------------------------------------------------------------------------
def test_third_derivative():
    x = leaf([0.5, -1.5])
    y = x ** 4
    g1, = tl.autograd.grad(y, x, tl.ones(2, dtype=F64), create_graph=True)
    g2, = tl.autograd.grad(g1, x, tl.ones(2, dtype=F64), create_graph=True)
    g3, = tl.autograd.grad(g2, x, tl.ones(2, dtype=F64))
    np.testing.assert_allclose(g1.detach().numpy(), 4 * np.array([0.5, -1.5]) ** 3)
    np.testing.assert_allclose(g2.detach().numpy(), 12 * np.array([0.5, -1.5]) ** 2)
    np.testing.assert_allclose(g3.numpy(), 24 * np.array([0.5, -1.5]))


def test_hessian_vector_product():
    xv, vv = np.array([0.3, -0.7, 1.1]), np.array([1.0, 2.0, -0.5])
    x = leaf(xv)
    f = (x.sin() * x * x).sum()
    g, = tl.autograd.grad(f, x, create_graph=True)
    hv, = tl.autograd.grad((g * tl.tensor(vv)).sum(), x)
    h_diag = 2 * np.sin(xv) + 4 * xv * np.cos(xv) - xv ** 2 * np.sin(xv)   # d2/dx2 of x^2 sin x
    np.testing.assert_allclose(hv.numpy(), h_diag * vv, rtol=1e-12)


def test_mixed_second_derivatives_match_torch():
    torch = pytest.importorskip("torch")

    def hessian(L):
        x = L.tensor([0.4, -0.3], dtype=L.float64, requires_grad=True)
        y = L.tensor([1.2, 0.7], dtype=L.float64, requires_grad=True)
        f = ((x * y).exp() + x.tanh() * y ** 3 - (x / y).atan()).sum()
        gx, gy = L.autograd.grad(f, [x, y], create_graph=True)
        rows = [L.autograd.grad(g[i], [x, y], retain_graph=True) for g in (gx, gy) for i in range(2)]
        return np.array([[r[0].tolist(), r[1].tolist()] for r in rows])
    np.testing.assert_allclose(hessian(tl), hessian(torch), rtol=1e-12)


def test_gradient_of_a_gradient_that_has_no_graph_is_an_error():
    x = leaf([1.0, 2.0])
    g, = tl.autograd.grad(x * 3, x, tl.ones(2, dtype=F64), create_graph=True)
    assert not g.requires_grad                       # the gradient of 3x does not depend on x
    g, = tl.autograd.grad(x * x, x, tl.ones(2, dtype=F64))
    assert not g.requires_grad                       # without create_graph there is no graph
    with pytest.raises(RuntimeError, match="does not require grad"):
        tl.autograd.grad(g, x, tl.ones(2, dtype=F64))


# ---- grad modes ------------------------------------------------------------------------------------------
def test_grad_mode_context_managers():
    x = leaf([1.0])
    with tl.no_grad():
        assert not tl.is_grad_enabled() and not (x * 2).requires_grad
        with tl.enable_grad():
            assert tl.is_grad_enabled() and (x * 2).requires_grad
        assert not tl.is_grad_enabled()
    assert tl.is_grad_enabled()
    with tl.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tl.is_grad_enabled()
    tl.set_grad_enabled(False)
    try:
        assert not tl.is_grad_enabled()
    finally:
        tl.set_grad_enabled(True)
    with tl.inference_mode():
        assert tl.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not tl.is_inference_mode_enabled()
    with tl.inference_mode(False):
        assert (x * 2).requires_grad
    with pytest.raises(ValueError):
        with tl.no_grad():
            raise ValueError
    assert tl.is_grad_enabled()


def test_grad_mode_decorators():
    x = leaf([1.0])

    @tl.no_grad()
    def a():
        return (x * 2).requires_grad

    @tl.no_grad
    def b():
        return (x * 2).requires_grad

    @tl.enable_grad()
    def c():
        return (x * 2).requires_grad

    @tl.set_grad_enabled(False)
    def d():
        return (x * 2).requires_grad

    @tl.inference_mode
    def e():
        return (x * 2).requires_grad

    @tl.inference_mode()
    def f():
        return tl.is_inference_mode_enabled()

    assert tl.is_grad_enabled()                      # decorating changed nothing
    assert (a(), b(), d(), e(), f()) == (False, False, False, False, True)
    with tl.no_grad():
        assert c() is True
    assert a.__name__ == "a" and tl.is_grad_enabled()


def test_grad_mode_decorated_generator():
    @tl.no_grad()
    def gen():
        for _ in range(2):
            yield tl.is_grad_enabled()

    it = gen()
    assert next(it) is False and tl.is_grad_enabled() and next(it) is False
    assert list(it) == []


def test_grad_mode_is_thread_local():
    seen = {}
    entered, checked = threading.Event(), threading.Event()

    def inside_no_grad():
        with tl.no_grad():
            entered.set()
            checked.wait(5)
            seen["a"] = tl.is_grad_enabled()

    def other():
        entered.wait(5)
        seen["b"] = tl.is_grad_enabled()
        x = leaf([1.0])
        seen["b_records"] = (x * 2).requires_grad
        checked.set()

    threads = [threading.Thread(target=inside_no_grad), threading.Thread(target=other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": False, "b": True, "b_records": True}
    tl.set_grad_enabled(False)
    try:
        t = threading.Thread(target=lambda: seen.setdefault("new", tl.is_grad_enabled()))
        t.start()
        t.join()
    finally:
        tl.set_grad_enabled(True)
    assert seen["new"] is True                       # a new thread starts with grad enabled


def test_backward_runs_without_recording_unless_create_graph():
    x = leaf([1.0, 2.0])
    modes = []
    y = x * 2
    y.register_hook(lambda g: modes.append(tl.is_grad_enabled()))
    y.backward(tl.ones(2, dtype=F64), retain_graph=True)
    y.backward(tl.ones(2, dtype=F64), create_graph=True)
    assert modes == [False, True] and tl.is_grad_enabled()


# ---- detach, hooks, retain_grad ---------------------------------------------------------------------
def test_detach_shares_memory_and_version():
    x = leaf([1.0, 2.0])
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d[0] = 5.0
    assert y.tolist() == [5.0, 4.0] and y._version == d._version == 1


def test_detach_in_place():
    x = leaf([1.0, 2.0])
    y = x * 2
    assert y.detach_() is y
    assert not y.requires_grad and y.is_leaf and y.grad_fn is None
    x.detach_()
    assert not x.requires_grad


def test_hooks_on_leaf_and_non_leaf():
    x = leaf([1.0, 2.0])
    seen = []
    h = x.register_hook(lambda g: (seen.append(g.tolist()), g * 10)[1])
    (x * 3).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [30.0, 30.0] and seen == [[3.0, 3.0]]
    h.remove()
    (x * 3).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [33.0, 33.0]
    x.grad = None
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: g + 1)                 # runs second, sees the first one's result
    (y * y).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [82.0, 162.0]
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        tl.ones(2).register_hook(lambda g: g)


def test_retain_grad_sees_final_gradient_and_accumulates():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 100)              # retain_grad always sees the hooked gradient
    z = y * 1
    z.backward(tl.ones(2, dtype=F64), retain_graph=True)
    assert y.retains_grad and not x.retains_grad and y.grad.tolist() == [100.0, 100.0]
    z.backward(tl.ones(2, dtype=F64))
    assert y.grad.tolist() == [200.0, 200.0] and x.grad.tolist() == [400.0, 400.0]
    x.retain_grad()                                  # a no-op on a leaf
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        tl.ones(2).retain_grad()


def test_hooks_and_retain_grad_across_in_place():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.retain_grad()
    before = []
    y.register_hook(lambda g: before.append(g.tolist()))
    y.mul_(3)                                        # y's history moves to the MulBackward0 of mul_
    (y * y).backward(tl.ones(2, dtype=F64))
    assert y.grad.tolist() == [12.0, 24.0]           # the gradient of y's latest version
    assert before == [[36.0, 72.0]]                  # the hook saw the gradient of the old version


def test_post_accumulate_grad_hook_and_node_hooks():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    y = x.exp()
    y.grad_fn.register_hook(lambda gin, gout: (gin[0] * 0 + 7,))
    y.backward(tl.ones(2, dtype=F64))
    assert seen == [[7.0, 7.0]] and x.grad.tolist() == [7.0, 7.0]
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.register_post_accumulate_grad_hook(lambda t: None)


# ---- in-place operations -----------------------------------------------------------------------------------
def test_version_counter():
    x = tl.tensor([1.0, 2.0])
    versions = [x._version]
    x.add_(1)
    versions.append(x._version)
    x[0] = 3
    versions.append(x._version)
    x[1:].mul_(2)                    # a view shares the counter
    versions.append(x._version)
    x += 1
    versions.append(x._version)
    assert versions == [0, 1, 2, 3, 4]
    assert x.detach()._version == 4 and (x * 1)._version == 0


MODIFIED = re.escape("one of the variables needed for gradient computation has been modified by an "
                     "inplace operation: [torchlite.float64 [2]], which is output 0 of ExpBackward0, "
                     "is at version 1; expected version 0 instead.")


def test_modifying_a_saved_tensor_raises():
    x = leaf([1.0, 2.0])
    y = (x * 2).exp()                                # exp saves its result
    y.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.backward(tl.ones(2, dtype=F64))
    a = x * 1
    b = a * x                                        # mul saves a
    a.zero_()
    with pytest.raises(RuntimeError, match="which is output 0 of MulBackward0, is at version 1; expected version 0"):
        b.backward(tl.ones(2, dtype=F64))


def test_in_place_on_leaf_requiring_grad():
    x = leaf([1.0, 2.0])
    for op in (lambda: x.add_(1), lambda: x.exp_(), lambda: x.mul_(x), lambda: x.clamp_(0, 1)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in "
                                               "an in-place operation."):
            op()
    with tl.no_grad():
        x.mul_(2)
    assert x.tolist() == [2.0, 4.0] and x.is_leaf and x.requires_grad and x._version == 1


def test_in_place_rebases_history():
    x = leaf([0.5, 1.5])
    y = x * 2
    y.sin_()
    y.mul_(x)
    y.add_(x, alpha=2)
    y.pow_(2)
    assert y.grad_fn.name() == "PowBackward0" and y._version == 4
    y.backward(tl.ones(2, dtype=F64))
    xv = np.array([0.5, 1.5])
    u = np.sin(2 * xv) * xv + 2 * xv
    du = 2 * np.cos(2 * xv) * xv + np.sin(2 * xv) + 2
    np.testing.assert_allclose(x.grad.numpy(), 2 * u * du, rtol=1e-12)


def test_in_place_into_a_tensor_without_history():
    w = leaf([0.5, 1.5])
    b = tl.zeros(2, dtype=F64)
    b.add_(w * 3)
    b.mul_(w)
    assert b.requires_grad and not b.is_leaf
    b.backward(tl.ones(2, dtype=F64))
    assert w.grad.tolist() == [3.0, 9.0]


def test_in_place_errors_on_the_recording_path():
    w = leaf([1.0, 2.0])
    n = tl.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Double can't be cast to the desired output type Long"):
        n.add_(w)
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"):
        (w * 1).add_(tl.ones(2, 2, dtype=F64))


def test_in_place_through_a_view_updates_the_base():
    x = leaf([1.0, 2.0, 3.0])
    y = x * 2
    row = y[1:]
    row.mul_(3)                                      # y's memory and history both change
    assert y.tolist() == [2.0, 12.0, 18.0] and y.grad_fn.name() == "CopySlices"
    assert row._base is y and row._is_view()
    (y * y).backward(tl.ones(3, dtype=F64))
    assert x.grad.tolist() == [8.0, 144.0, 216.0]    # d/dx (2x)^2 and (6x)^2
    x.grad = None
    y = x * 2
    first = y[0:2]
    y.mul_(5)                                        # the base changes: views follow
    (first * 1).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [10.0, 10.0, 0.0]


def test_gradcheck_through_in_place_writes_into_views():
    def f(x, w):
        y = x * 2
        y[0].mul_(w)
        y[:, 1].exp_()
        return y.sin()
    x = tl.tensor([[0.3, -0.6, 1.1], [0.8, 0.2, -1.4]], dtype=F64).t().contiguous().t().detach()
    w = leaf([0.7, -1.3, 0.4])
    assert gradcheck(f, (x.requires_grad_(), w))
    assert gradgradcheck(f, (x, w))


VIEW_CASES = {
    "slice": lambda L, x, w: (lambda y: (y[1:].mul_(3), y * y)[1])(x * 2),
    "column_exp": lambda L, x, w: (lambda y: (y[:, 1].exp_(), y)[1])(x * 2),
    "row_add_other": lambda L, x, w: (lambda y: (y[0].add_(w), y.sin())[1])(x * 2),
    "other_view_used": lambda L, x, w: (lambda y: (lambda v2: (y[0].mul_(w), v2 * 1)[1])(y[:, 0]))(x * 2),
    "transposed": lambda L, x, w: (lambda y: (y.t().mul_(2), y)[1])(x * 2),
    "view_used_after": lambda L, x, w: (lambda y: (lambda v: (v.mul_(2), v * v)[1])(y[0]))(x * 2),
    "base_changed": lambda L, x, w: (lambda y: (lambda v: (y.mul_(3), v * 1)[1])(y[0]))(x * 2),
    "strided_base": lambda L, x, w: (lambda y: (y[:, ::2].sin_(), y)[1])((x * 2).t().contiguous().t()),
    "view_of_view": lambda L, x, w: (lambda y: (y[0][1:].mul_(w[1:]), y)[1])(x * 2),
    "flat_view": lambda L, x, w: (lambda y: (y.view(-1)[1:4].exp_(), y.reshape(3, 2))[1])(x * 2),
    "saved_then_written": lambda L, x, w: (lambda v: (lambda z: (v.add_(1), z)[1])(v.exp()))((x * 2)[0]),
    "written_view_of_saved": lambda L, x, w: (lambda y: (y[0].mul_(2), y)[1])(x.exp()),
    "view_of_leaf": lambda L, x, w: (x[0].add_(1), x)[1],
    "multi_output_view": lambda L, x, w: (lambda y: (y.unbind(0)[0].mul_(w), y)[1])(x * 2),
}


@pytest.mark.parametrize("case", sorted(VIEW_CASES))
def test_in_place_through_views_matches_torch(case):
    torch = pytest.importorskip("torch")

    def run(L):
        x = L.tensor([[0.5, 1.5, -0.3], [0.2, -0.8, 1.1]], dtype=L.float64, requires_grad=True)
        w = L.tensor([2.0, 3.0, -1.0], dtype=L.float64, requires_grad=True)
        try:
            out = VIEW_CASES[case](L, x, w)
            out.backward(L.ones_like(out))
        except RuntimeError as e:
            return str(e).split(":")[0].split(" is ")[0].replace("UnbindBackward0", "Unbind")
        return x.grad.numpy(), None if w.grad is None else w.grad.numpy()

    mine, theirs = run(tl), run(torch)
    if isinstance(theirs, str):
        assert mine == theirs
        return
    assert not isinstance(mine, str), mine
    for m, t in zip(mine, theirs):
        assert (m is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(m, t, rtol=1e-12, atol=1e-12)


# ---- broadcasting, dtypes, empty and 0-d -------------------------------------------------------------------
@pytest.mark.parametrize("sa, sb", [((2, 1, 3), (4, 1)), ((), (2, 3)), ((1,), (2, 3)), ((2, 3), (2, 3)),
                                    ((0, 3), (1, 3)), ((2, 0), ()), ((1, 1), (3,))])
def test_broadcast_gradients_reduce_to_input_shape(sa, sb):
    a = tl.tensor(np.arange(1.0, 1.0 + np.prod(sa)).reshape(sa), dtype=F64, requires_grad=True)
    b = tl.tensor(np.arange(2.0, 2.0 + np.prod(sb)).reshape(sb), dtype=F64, requires_grad=True)
    y = a * b
    y.backward(tl.ones(y.shape, dtype=F64))
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    an, bn = a.detach().numpy(), b.detach().numpy()
    full = np.broadcast_shapes(sa, sb)
    np.testing.assert_allclose(a.grad.numpy(), _sum_to(np.broadcast_to(bn, full), sa))
    np.testing.assert_allclose(b.grad.numpy(), _sum_to(np.broadcast_to(an, full), sb))


def _sum_to(arr, shape):
    lead = arr.ndim - len(shape)
    arr = arr.sum(axis=tuple(range(lead))) if lead else arr
    axes = tuple(i for i, s in enumerate(shape) if s == 1 and arr.shape[i] != 1)
    return arr.sum(axis=axes, keepdims=True) if axes else arr


def test_float32_gradients_and_integer_inputs():
    x = tl.tensor([1.0, -2.0], requires_grad=True)
    k = tl.tensor([3, 4])
    y = x * k
    assert y.dtype is tl.float32
    y.backward(tl.ones(2))
    assert x.grad.dtype is tl.float32 and x.grad.tolist() == [3.0, 4.0]
    assert not (k * 2).requires_grad and not (x > 0).requires_grad


# ---- gradcheck / gradgradcheck themselves ------------------------------------------------------------------
def _square_function(first_scale, second_exact):
    class Square(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            x = x if second_exact else x.detach()
            return g * x * first_scale
    return Square


def test_gradcheck_accepts_right_and_rejects_wrong_gradients():
    x = tl.tensor([[0.3, -1.2], [0.8, 2.0]], dtype=F64).t().detach().requires_grad_()
    assert gradcheck(_square_function(2.0, True).apply, (x,))
    assert gradgradcheck(_square_function(2.0, True).apply, (x,))
    wrong = _square_function(2.01, True).apply
    with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        gradcheck(wrong, (x,))
    assert gradcheck(wrong, (x,), raise_exception=False) is False
    first_only = _square_function(2.0, False).apply         # right first, wrong second derivative
    assert gradcheck(first_only, (x,))
    assert gradgradcheck(first_only, (x,), raise_exception=False) is False
    with pytest.raises(GradcheckError):
        gradgradcheck(first_only, (x,))
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (tl.ones(2, dtype=F64),))


def test_gradcheck_detects_a_nondeterministic_backward():
    calls = [0]

    class Flaky(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls[0] += 1
            return g * (2 + 1e-3 * calls[0])

    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Flaky.apply, (leaf([1.0, 2.0]),), atol=1e-2)


def test_gradcheck_on_several_inputs_and_outputs():
    a, b = leaf([[0.5, -1.0, 2.0]]), leaf([[1.5], [-0.5]])
    assert gradcheck(lambda p, q: ((p * q).sin(), p.exp() + 1), (a, b))
    assert gradgradcheck(lambda p, q: ((p * q).sin(), p.exp() + 1), (a, b))


# ---- anomaly detection ------------------------------------------------------------------------------------
def test_detect_anomaly_names_the_forward_op():
    x = leaf([0.0, 1.0])
    with tl.autograd.detect_anomaly():
        assert tl.autograd.is_anomaly_enabled()
        y = x.sqrt()                                # the op whose backward makes NaN (0 * inf)
        z = y * 0
        with pytest.raises(RuntimeError) as err:
            z.backward(tl.ones(2, dtype=F64))
    assert not tl.autograd.is_anomaly_enabled()
    msg = str(err.value)
    assert msg.startswith("Function 'SqrtBackward0' returned nan values in its 0th output.")
    assert "test_autograd_core.py" in msg and "y = x.sqrt()" in msg
    assert "torchlite/_ops" not in msg                # the user's frames, not the library's


def test_without_anomaly_mode_nan_passes_silently():
    x = leaf([0.0, 1.0])
    (x.sqrt() * 0).backward(tl.ones(2, dtype=F64))
    assert math.isnan(x.grad[0].item())


def test_set_detect_anomaly_and_errors_inside_backward():
    prev = tl.autograd.set_detect_anomaly(True)
    try:
        assert tl.autograd.is_anomaly_enabled()

        class Boom(tl.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 1

            @staticmethod
            def backward(ctx, g):
                raise ValueError("boom")

        x = leaf([1.0])
        y = Boom.apply(x)
        with pytest.raises(ValueError, match="boom") as err:
            y.backward()
        assert any("y = Boom.apply(x)" in note for note in err.value.__notes__)
    finally:
        tl.autograd.set_detect_anomaly(False)
    assert not tl.autograd.is_anomaly_enabled()
    with tl.autograd.set_detect_anomaly(True):
        assert tl.autograd.is_anomaly_enabled()
    assert not tl.autograd.is_anomaly_enabled() and prev is not None


# ---- the engine: deep graphs, freeing ------------------------------------------------------------------------
def test_long_chain_backpropagates_iteratively():
    x = tl.tensor([1.0], dtype=F64, requires_grad=True)
    n = 100_000
    start = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.00001
    built = time.perf_counter()
    y.backward()
    done = time.perf_counter()
    del y
    freed = time.perf_counter()
    print(f"\n100k-op chain: forward {built - start:.2f} s, backward {done - built:.2f} s, "
          f"free {freed - done:.2f} s")
    assert x.grad.item() == pytest.approx(1.00001 ** n, rel=1e-3)
    z = x
    for _ in range(n):                              # a graph that is never run is freed too
        z = z.sin()
    del z


def test_saved_tensors_and_graph_are_released_after_backward():
    gc.collect()
    base = _A.memory_stats()["allocated"]
    x = tl.randn(1000, dtype=F64, requires_grad=True)
    a = x * 2                                       # saved as an input by sin
    y = a.sin()
    out = y.exp()                                   # saves its own output
    node = weakref.ref(y.grad_fn)
    a_ref = weakref.ref(a)
    del a, y
    assert a_ref() is not None                       # the graph keeps it alive
    out.backward(tl.ones(1000, dtype=F64))
    assert a_ref() is None                          # freed with the saved tensors
    assert node() is not None                       # the node lives as long as out does
    del out
    assert node() is None                            # no reference cycles: freed at once
    del x
    assert _A.memory_stats()["allocated"] == base


def test_no_memory_growth_over_many_training_steps():
    w = tl.randn(8, dtype=F64, requires_grad=True)
    b = tl.zeros(1, dtype=F64, requires_grad=True)
    data, target = tl.randn(4, 8, dtype=F64), tl.randn(4, 1, dtype=F64)

    def step():
        pred = (data * w).sum(dim=1, keepdim=True) + b
        loss = ((pred - target) ** 2).mean()
        loss.backward()
        with tl.no_grad():
            w.sub_(w.grad * 0.01)
            b.sub_(b.grad * 0.01)
        w.grad = None
        b.grad = None

    for _ in range(200):
        step()
    gc.collect()
    arrays_before = _A.memory_stats()["allocated"]
    tracemalloc.start()
    try:
        for _ in range(1000):
            step()
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        for _ in range(9000):
            step()
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 20_000, f"Python memory grew by {second - first} bytes over 9000 steps"
    assert _A.memory_stats()["allocated"] == arrays_before


# ---- dynamic graphs --------------------------------------------------------------------------------------
def test_data_dependent_control_flow():
    def f(x):
        y = x
        factors = []
        while y.abs().max().item() < 10:            # a loop whose length depends on the values
            k = 2.0 if y.sum().item() > 0 else -3.0
            y = y * k
            factors.append(k)
        out = (y * y).sum() if len(factors) % 2 else (y / 8).exp().sum()
        return out, factors

    for start in ([1.0, 2.0], [-0.5, 0.2], [3.0, -1.0], [0.01, 0.02]):
        x = leaf(start)
        out, factors = f(x)
        out.backward()
        scale = np.prod(factors)
        xv = np.array(start)
        expect = (2 * scale ** 2 * xv if len(factors) % 2 else
                  np.exp(scale * xv / 8) * scale / 8)
        np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-12)


def test_every_iteration_builds_a_new_graph():
    w = leaf([0.5])
    names = []
    for i in range(4):
        y = w.sin() if i % 2 else w.exp()
        names.append(y.grad_fn.name())
        y.backward()
    assert names == ["ExpBackward0", "SinBackward0"] * 2
    assert w.grad.item() == pytest.approx(2 * math.exp(0.5) + 2 * math.cos(0.5))


def test_backward_in_several_threads_at_once():
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(50):
                x = leaf([float(k), 1.0])
                ((x * k).sin() * x).backward(tl.ones(2, dtype=F64))
                xv = np.array([float(k), 1.0])
                np.testing.assert_allclose(x.grad.numpy(), k * np.cos(k * xv) * xv + np.sin(k * xv))
            results[k] = True
        except Exception as e:      # noqa: BLE001  (reported below)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {1: True, 2: True, 3: True}


def test_roots_that_share_a_node():
    """Two outputs of one node as roots: the node must run once with both gradients."""
    x = tl.tensor([1.0, 2.0, 3.0, 4.0], dtype=tl.float64, requires_grad=True)
    a, b = x.split(2)
    tl.autograd.backward([a, b], [tl.ones(2, dtype=tl.float64), tl.full((2,), 2.0, dtype=tl.float64)])
    assert x.grad.tolist() == [1.0, 1.0, 2.0, 2.0]
    v, m = tl.var_mean(x)
    gv, = tl.autograd.grad([v, m], [x], [tl.tensor(1.0, dtype=tl.float64)] * 2)
    torch = pytest.importorskip("torch")
    xt = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    vt, mt = torch.var_mean(xt)
    gt, = torch.autograd.grad([vt, mt], [xt], [torch.tensor(1.0, dtype=torch.float64)] * 2)
    assert gv.tolist() == pytest.approx(gt.tolist())


def test_hook_may_not_change_dtype_or_shape():
    x = tl.ones(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match="changed the type of value"):
        y.sum().backward()
    x = tl.ones(3, requires_grad=True)
    x.register_hook(lambda g: g[:2])
    with pytest.raises(RuntimeError, match="changed the size of value"):
        (x * 2).sum().backward()


def test_data_has_its_own_version_counter():
    """In-place changes through .data are not seen by autograd's checks (PyTorch); through
    detach() they are."""
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.sigmoid()
    y.data.add_(1)
    y.sum().backward()                  # uses the modified y, as PyTorch does
    yd = y.detach()                     # sigmoid's backward reads the saved (modified) output
    assert x.grad.tolist() == pytest.approx((yd * (1 - yd)).tolist())
    x2 = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y2 = x2.sigmoid()
    y2.detach().add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.sum().backward()


@pytest.mark.parametrize("write", [
    lambda x: tl.add(x, 1, out=x), lambda x: tl.maximum(x, x * 0, out=x),
    lambda x: tl.exp(x, out=x), lambda x: tl.where(x > 0, x, x, out=x),
    lambda x: tl.lerp(x, x, 0.5, out=x), lambda x: tl.zeros(3, out=x),
    lambda x: tl.index_select(x.clone(), 0, tl.tensor([2, 1, 0]), out=x),
    lambda x: tl.sum(x.clone().view(1, 3), 0, out=x)])
def test_out_argument_write_is_seen_by_the_version_check(write):
    """A write through out= is an in-place change: a saved tensor it overwrote raises."""
    w = tl.ones(3, requires_grad=True)
    x = w * 1
    y = x * x
    with tl.no_grad():
        write(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_grad_with_a_root_reachable_from_another_root():
    """One root's node is upstream of another root: it must wait for that gradient."""
    x = tl.tensor([1.0, 2.0], dtype=tl.float64, requires_grad=True)
    w = x * 3
    v = w * w
    gx, = tl.autograd.grad((w, v), x, (tl.ones(2, dtype=tl.float64), tl.ones(2, dtype=tl.float64)))
    # d/dx (3x + 9x^2) = 3 + 18x
    assert gx.tolist() == [21.0, 39.0]
    w = x * 3
    v = w * w
    tl.autograd.backward((v.sum(), w.sum()))
    assert x.grad.tolist() == [21.0, 39.0]
