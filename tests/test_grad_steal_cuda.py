"""test_grad_steal.py's rules on CUDA tensors: a leaf takes a fresh device gradient (a block
of torchlite's caching allocator that nothing else holds) as its .grad without a copy, as
PyTorch's AccumulateGrad does; a gradient something else can still reach is copied.  Runs on
the stand-in driver (and on a GPU where one is usable: the `cuda_device` fixture)."""
import numpy as np

import torchlite as tl
import torchlite.nn as nn
from torchlite.autograd import engine
from test_grad_steal import Passthrough, _owned_flags, _shares


def _leaf(*shape, device):
    return tl.randn(*shape).to(device).requires_grad_()


def test_fresh_gradients_are_taken_without_a_copy(cuda_device):
    tl.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(cuda_device)
    x, y = tl.randn(5, 8).to(cuda_device), tl.randint(0, 3, (5,)).to(cuda_device)
    flags = _owned_flags(lambda: nn.CrossEntropyLoss()(m(x), y).backward())
    assert flags and all(flags)
    g1 = [p.grad.cpu().numpy().copy() for p in m.parameters()]
    assert all(p.grad.device.type == "cuda" for p in m.parameters())
    nn.CrossEntropyLoss()(m(x), y).backward()             # a second backward adds in place
    for p, g in zip(m.parameters(), g1):
        np.testing.assert_allclose(p.grad.cpu().numpy(), 2 * g, rtol=1e-5, atol=1e-6)
    grads = [p.grad for p in m.parameters()]
    for i, a in enumerate(grads):                         # no two leaves share a .grad
        for b in grads[i + 1:]:
            assert not _shares(a, b)


def test_one_gradient_for_two_leaves_is_copied(cuda_device):
    a, b = _leaf(4, device=cuda_device), _leaf(4, device=cuda_device)
    (a + b).backward(tl.ones(4).to(cuda_device))         # add's backward passes one tensor on
    assert not _shares(a.grad, b.grad)
    (a * 2 + b).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), np.full(4, 3.0))
    np.testing.assert_allclose(b.grad.cpu().numpy(), np.full(4, 2.0))


def test_a_gradient_the_caller_passed_is_copied(cuda_device):
    w = _leaf(3, device=cuda_device)
    u = tl.ones(3).to(cuda_device)
    flags = _owned_flags(lambda: w.backward(u))
    assert flags == [False] and not _shares(w.grad, u)
    u.fill_(5.0)
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.ones(3))


def test_a_gradient_a_hook_keeps_is_copied(cuda_device):
    w = _leaf(3, device=cuda_device)
    kept = []
    w.register_hook(lambda g: kept.append(g))
    (w * 3).sum().backward()
    assert not _shares(w.grad, kept[0])
    (w * 3).sum().backward()
    np.testing.assert_allclose(kept[0].cpu().numpy(), np.full(3, 3.0))
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.full(3, 6.0))


def test_views_of_one_gradient_are_copied(cuda_device):
    a, b = _leaf(2, 3, device=cuda_device), _leaf(2, 3, device=cuda_device)
    weights = tl.arange(12.).reshape(4, 3).to(cuda_device)
    flags = _owned_flags(lambda: (tl.cat([a, b]) * weights).sum().backward())
    assert flags == [False, False] and not _shares(a.grad, b.grad)
    a.grad.zero_()
    np.testing.assert_allclose(b.grad.cpu().numpy(), np.arange(6.0, 12.0).reshape(2, 3))


def test_a_retained_gradient_and_a_leaf_do_not_share(cuda_device):
    w = _leaf(3, device=cuda_device)
    y = w.clone()
    y.retain_grad()
    y.sum().backward()
    assert not _shares(w.grad, y.grad)
    w.grad.add_(1.0)
    np.testing.assert_allclose(y.grad.cpu().numpy(), np.ones(3))


def test_custom_function_returning_a_saved_tensor_is_copied(cuda_device):
    w = _leaf(3, device=cuda_device)
    scale = tl.full((3,), 4.0).to(cuda_device)
    Passthrough.apply(w, scale).sum().backward()
    assert not _shares(w.grad, scale)
    w.grad.add_(1.0)
    np.testing.assert_allclose(scale.cpu().numpy(), np.full(3, 4.0))


def test_a_training_loop_equals_the_cpu(cuda_device):
    """SGD with momentum over a few steps (zero_grad(set_to_none) each time, so every step's
    gradients are taken without a copy): the same parameters as on the CPU."""
    def run(device):
        tl.manual_seed(3)
        m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).to(device)
        opt = tl.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        g = tl.Generator().manual_seed(1)
        for _ in range(4):
            x = tl.randn(7, 6, generator=g).to(device)
            opt.zero_grad()
            (m(x) ** 2).mean().backward()
            opt.step()
        return [p.detach().cpu().numpy() for p in m.parameters()]
    for a, b in zip(run(cuda_device), run("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_create_graph_keeps_its_history(cuda_device):
    w = tl.tensor([1.0, 2.0]).to(cuda_device).requires_grad_()
    (w ** 3).sum().backward(create_graph=True)
    assert w.grad.requires_grad
    np.testing.assert_allclose(w.grad.detach().cpu().numpy(), [3.0, 12.0])


def test_only_the_allocators_own_blocks_are_taken(cuda_device):
    """allocator_owned tells a device array's own block from other memory: a fresh array's
    is, a CPU array (NumPy's or torchlite's host memory) has no such block and its gradients
    keep the CPU's rules."""
    t = tl.ones(3).to(cuda_device)
    assert t._data.allocator_owned()
    assert t[1:]._data.allocator_owned()           # a view: the same block (the engine's
    assert engine._allocator_owned(t._data)        # offset and size checks refuse views)
    assert not engine._allocator_owned(tl.ones(3)._data)
    assert not engine._sole_owner(t[1:])


def test_a_gradient_over_imported_memory_is_copied(cuda_device):
    """A custom Function's backward returns a tensor over memory imported through DLPack (its
    owner is the capsule's, not the allocator's: reference counts cannot see the exporter's
    hold on it), which must not become .grad."""
    kept = tl.full((3,), 2.0).to(cuda_device)

    class Imported(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return tl.from_dlpack(kept.__dlpack__())
    w = _leaf(3, device=cuda_device)
    flags = _owned_flags(lambda: Imported.apply(w).sum().backward())
    assert flags == [False] and not _shares(w.grad, kept)
    w.grad.add_(1.0)
    np.testing.assert_allclose(kept.cpu().numpy(), np.full(3, 2.0))
