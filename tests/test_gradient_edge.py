"""torchlite.autograd.graph.GradientEdge and get_gradient_edge: a place in the graph that
autograd.grad takes for an input or an output, as PyTorch's."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd.graph import GradientEdge, get_gradient_edge


def test_the_edge_of_a_tensor_is_its_node_and_slot():
    x = tl.randn(3, requires_grad=True)
    y = x * 2
    e = get_gradient_edge(y)
    assert isinstance(e, GradientEdge) and e.node is y.grad_fn and e.output_nr == 0
    assert e.ownership_token is None
    assert type(get_gradient_edge(x).node).__name__ == "AccumulateGrad"
    _, b = tl.randn(2, requires_grad=True).unbind()
    assert get_gradient_edge(b).output_nr == 1
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(tl.ones(2))


def test_grad_with_respect_to_an_edge_is_the_tensor_gradient_even_after_the_tensor_changes():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(4)
    x = tl.tensor(xv, requires_grad=True)
    y = x * 2
    e = get_gradient_edge(y)
    z = y.sin()
    y = None                                   # the edge outlives the Python tensor
    (g,) = tl.autograd.grad(z.sum(), e, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), np.cos(2 * xv), rtol=1e-12)
    (gx, ge) = tl.autograd.grad(z.sum(), (x, get_gradient_edge(x)))
    np.testing.assert_allclose(gx.numpy(), 2 * np.cos(2 * xv), rtol=1e-12)
    np.testing.assert_array_equal(gx.numpy(), ge.numpy())


def test_an_edge_as_the_output_needs_its_gradient():
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = x * 3
    (g,) = tl.autograd.grad(get_gradient_edge(w), x, grad_outputs=tl.tensor([1.0, 0.5, 2.0]))
    assert g.tolist() == [3.0, 1.5, 6.0]
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        tl.autograd.grad(get_gradient_edge(x * 3), x)


def test_unused_edges_and_bad_arguments():
    x = tl.ones(2, requires_grad=True)
    unused = get_gradient_edge(tl.ones(2, requires_grad=True) * 1)
    (g,) = tl.autograd.grad((x * 2).sum(), unused, allow_unused=True)
    assert g is None
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        tl.autograd.grad((x * 2).sum(), unused)
    with pytest.raises(TypeError, match="GradientEdges"):
        tl.autograd.grad((x * 2).sum(), [x, 3])


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    v = np.random.default_rng(1).standard_normal((2, 3))
    results = []
    for lib in (torch, tl):
        x = lib.tensor(v, requires_grad=True)
        h = x.tanh()
        out = (h * h).sum(1)
        e = lib.autograd.graph.get_gradient_edge(h)
        results.append(lib.autograd.grad(out, [e, x], grad_outputs=lib.tensor([1.0, -2.0],
                                                                                dtype=lib.float64)))
    for a, b in zip(*results):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)
