"""A leaf takes a gradient nothing else holds as its .grad without a copy (as PyTorch's
AccumulateGrad steals a gradient whose use count is one); a gradient something else can still
see is copied.  Each case checks the values against NumPy and that the .grad shares no memory
with any tensor the user or another leaf can reach."""
import numpy as np

import torchlite as tl
import torchlite.nn as nn
from torchlite.autograd import engine


def _owned_flags(fn):
    """Run fn() and return the `owned` flag of each .grad the engine stored."""
    flags = []
    orig = engine._store_grad

    def spy(t, g, create_graph, owned=False):
        flags.append(owned)
        return orig(t, g, create_graph, owned)
    engine._store_grad = spy
    try:
        fn()
    finally:
        engine._store_grad = orig
    return flags


def _shares(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def test_fresh_gradients_are_taken_without_a_copy():
    tl.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    x, y = tl.randn(5, 8), tl.randint(0, 3, (5,))
    flags = _owned_flags(lambda: nn.CrossEntropyLoss()(m(x), y).backward())
    assert flags and all(flags)          # weights (views of a product) and biases alike
    # the values: the same as a copy would give (a second backward adds in place)
    g1 = [p.grad.clone() for p in m.parameters()]
    nn.CrossEntropyLoss()(m(x), y).backward()
    for p, g in zip(m.parameters(), g1):
        np.testing.assert_allclose(p.grad.numpy(), 2 * g.numpy(), rtol=1e-6, atol=1e-7)


def test_one_gradient_for_two_leaves_is_copied():
    a, b = tl.randn(4, requires_grad=True), tl.randn(4, requires_grad=True)
    (a + b).backward(tl.ones(4))             # add's backward passes one tensor to both
    assert not _shares(a.grad, b.grad)
    (a * 2 + b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(4, 3.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 2.0))


def test_a_gradient_the_caller_passed_is_copied():
    w = tl.randn(3, requires_grad=True)
    u = tl.ones(3)
    flags = _owned_flags(lambda: w.backward(u))
    assert flags == [False] and not _shares(w.grad, u)
    u.fill_(5.0)
    np.testing.assert_allclose(w.grad.numpy(), np.ones(3))
    y = tl.randn(3, requires_grad=True)
    z = y * 1.0
    z.backward(u)                             # through a node that passes u on unchanged
    u.fill_(7.0)
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 5.0))


def test_a_gradient_a_hook_keeps_is_copied():
    w = tl.randn(3, requires_grad=True)
    kept = []
    w.register_hook(lambda g: kept.append(g))
    (w * 3).sum().backward()
    assert not _shares(w.grad, kept[0])
    (w * 3).sum().backward()
    np.testing.assert_allclose(kept[0].numpy(), np.full(3, 3.0))
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 6.0))


def test_a_tensor_a_hook_returns_from_outside_is_copied():
    w = tl.randn(3, requires_grad=True)
    outside = tl.full((3,), 2.0)
    w.register_hook(lambda g: outside)
    (w * 3).sum().backward()
    assert not _shares(w.grad, outside)
    w.grad.add_(1.0)
    np.testing.assert_allclose(outside.numpy(), np.full(3, 2.0))


def test_views_of_one_gradient_are_copied():
    a, b = tl.randn(2, 3, requires_grad=True), tl.randn(2, 3, requires_grad=True)
    flags = _owned_flags(lambda: (tl.cat([a, b]) * tl.arange(12.).reshape(4, 3)).sum().backward())
    assert flags == [False, False] and not _shares(a.grad, b.grad)
    a.grad.zero_()
    np.testing.assert_allclose(b.grad.numpy(), np.arange(6.0, 12.0).reshape(2, 3))


def test_a_retained_gradient_and_a_leaf_do_not_share():
    w = tl.randn(3, requires_grad=True)
    y = w.clone()
    y.retain_grad()
    y.sum().backward()
    assert not _shares(w.grad, y.grad)
    w.grad.add_(1.0)
    np.testing.assert_allclose(y.grad.numpy(), np.ones(3))


class Passthrough(tl.autograd.Function):
    """x * scale whose backward returns the saved tensor itself, not a new one (shared with
    test_grad_steal_cuda.py)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(scale)
        return x * scale

    @staticmethod
    def backward(ctx, g):
        (scale,) = ctx.saved_tensors
        return scale, None


def test_custom_function_returning_a_saved_tensor_is_copied():
    w = tl.randn(3, requires_grad=True)
    scale = tl.full((3,), 4.0)
    Passthrough.apply(w, scale).sum().backward(retain_graph=False)
    assert not _shares(w.grad, scale)
    w.grad.add_(1.0)
    np.testing.assert_allclose(scale.numpy(), np.full(3, 4.0))


def test_numpy_owned_gradient_is_copied():
    arr = np.full(3, 2.0, dtype=np.float32)

    class FromNumpy(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return tl.from_numpy(arr)
    w = tl.randn(3, requires_grad=True)
    FromNumpy.apply(w).sum().backward()
    w.grad.add_(1.0)
    np.testing.assert_allclose(arr, np.full(3, 2.0))


def test_create_graph_keeps_its_history():
    w = tl.tensor([1.0, 2.0], requires_grad=True)
    (w ** 3).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    np.testing.assert_allclose(w.grad.detach().numpy(), [3.0, 12.0])
