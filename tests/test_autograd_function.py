"""Custom autograd Functions (torchlite/autograd/function.py): forward/backward with a ctx, the
ctx API (save_for_backward, saved_tensors, needs_input_grad, mark_non_differentiable,
set_materialize_grads, mark_dirty), once_differentiable, setup_context, and the checks
PyTorch makes on what backward returns."""
import numpy as np
import pytest

import torchlite as tl
from torchlite.autograd import Function, gradcheck, gradgradcheck, once_differentiable

F64 = tl.float64


def leaf(values, dtype=F64):
    return tl.tensor(values, dtype=dtype, requires_grad=True)


class ScaledExp(Function):
    """y = exp(x) * k, saving its output."""

    @staticmethod
    def forward(ctx, x, k):
        y = x.exp() * k
        ctx.save_for_backward(y)
        ctx.k = k
        ctx.seen_needs = ctx.needs_input_grad
        ctx.recording_inside = tl.is_grad_enabled()
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y, None


def test_forward_backward_and_the_node():
    x = leaf([1.0, 2.0])
    y = ScaledExp.apply(x, 2.0)
    assert y.requires_grad and y.grad_fn.name() == "ScaledExpBackward"
    assert type(y.grad_fn).__name__ == "ScaledExpBackward"
    assert y.grad_fn.next_functions[0][0].variable is x and y.grad_fn.next_functions[1] == (None, 0)
    ctx = y.grad_fn                                   # the ctx is the node, as in PyTorch
    assert ctx.k == 2.0 and ctx.seen_needs == (True, False) and ctx.needs_input_grad == (True, False)
    assert ctx.recording_inside is False              # forward runs without recording
    y.backward(tl.ones(2, dtype=F64))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward(tl.ones(2, dtype=F64))
    assert gradcheck(lambda t: ScaledExp.apply(t, 1.5), (leaf([0.3, -0.2]),))


def test_no_recording_without_grad():
    x = tl.tensor([1.0, 2.0], dtype=F64)
    y = ScaledExp.apply(x, 2.0)
    assert not y.requires_grad and y.grad_fn is None
    with tl.no_grad():
        z = ScaledExp.apply(leaf([1.0]), 2.0)
    assert not z.requires_grad and z.grad_fn is None


def test_saved_tensors_are_version_checked():
    x = leaf([1.0, 2.0])
    y = ScaledExp.apply(x, 2.0)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0 of ScaledExpBackward"):
        y.backward(tl.ones(2, dtype=F64))

    class SaveInput(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, nothing = ctx.saved_tensors
            assert nothing is None
            return g * a
    h = x * 1
    z = SaveInput.apply(h)
    assert z.grad_fn.saved_tensors[0] is h
    h.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation"):
        z.backward(tl.ones(2, dtype=F64))


def test_mark_non_differentiable():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, a):
            order = (a > 1.5)
            ctx.mark_non_differentiable(order)
            return a * 2, order

        @staticmethod
        def backward(ctx, g, g_order):
            assert g_order is None or not g_order.any()
            return g * 2

    a = leaf([1.0, 2.0])
    out, order = SortLike.apply(a)
    assert out.requires_grad and not order.requires_grad
    out.backward(tl.ones(2, dtype=F64))
    assert a.grad.tolist() == [2.0, 2.0]

    class FloatMask(Function):
        @staticmethod
        def forward(ctx, a):
            mask = (a > 1.5).to(a.dtype)
            ctx.mark_non_differentiable(mask)
            return a * 3, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            assert g_mask.tolist() == [0.0, 0.0]      # zeros, materialized
            return g * 3
    b = leaf([1.0, 2.0])
    out, mask = FloatMask.apply(b)
    assert not mask.requires_grad and mask.grad_fn is None
    out.backward(tl.ones(2, dtype=F64))
    assert b.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads(materialize):
    seen = []

    class Two(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(materialize)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            seen.append((g1 is None, g2 is None))
            gsum = g1 * 2
            if g2 is not None:
                assert g2.tolist() == [0.0, 0.0]
                gsum = gsum + g2 * 3
            return gsum

    a = leaf([1.0, 2.0])
    o1, _ = Two.apply(a)
    o1.backward(tl.ones(2, dtype=F64))
    assert a.grad.tolist() == [2.0, 2.0]
    assert seen == [(False, not materialize)]


def test_mark_dirty_rebases_the_input():
    class TimesTwo_(Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0, 2.0])
    y = x * 1
    z = TimesTwo_.apply(y)
    assert z is y and y.grad_fn.name() == "TimesTwo_Backward" and y._version == 2
    (z * z).backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [8.0, 16.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an "
                                           "in-place operation."):
        TimesTwo_.apply(leaf([1.0]))

    class Forgets(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.mark_dirty(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g
    with pytest.raises(RuntimeError, match="marked as dirty during the forward method were not returned"):
        Forgets.apply(x * 1)


def test_returning_an_input_unchanged_gives_a_new_tensor():
    class Identity(Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn.name() == "IdentityBackward"
    y.backward(tl.ones(2, dtype=F64))
    assert x.grad.tolist() == [2.0, 2.0]


def test_once_differentiable():
    class Square(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            a, = ctx.saved_tensors
            assert not tl.is_grad_enabled()
            return g * 2 * a

    x = leaf([1.0, 2.0])
    g, = tl.autograd.grad(Square.apply(x), x, tl.ones(2, dtype=F64), create_graph=True)
    assert g.tolist() == [2.0, 4.0] and not g.requires_grad
    v = leaf([1.0, 1.0])
    g, = tl.autograd.grad(Square.apply(x), x, v, create_graph=True)
    assert g.requires_grad and g.grad_fn.name() == "DelayedErrorBackward"
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):
        g.backward(tl.ones(2, dtype=F64))


def test_double_backward_through_a_function():
    class Cube(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return g * 3 * a * a

    x = leaf([1.0, -2.0])
    g, = tl.autograd.grad(Cube.apply(x), x, tl.ones(2, dtype=F64), create_graph=True)
    g2, = tl.autograd.grad(g, x, tl.ones(2, dtype=F64))
    assert g2.tolist() == [6.0, -12.0]
    assert gradgradcheck(Cube.apply, (leaf([0.4, -0.7]),))


def test_setup_context_style():
    class Mul(Function):
        @staticmethod
        def forward(a, b):
            return a * b

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    Mul.apply(a, b).backward(tl.ones(2, dtype=F64))
    assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]


def test_non_tensor_arguments_outputs_and_kwargs():
    class Affine(Function):
        @staticmethod
        def forward(ctx, a, scale, shift=1.0):
            ctx.scale = scale
            return a * scale + shift, "label"

        @staticmethod
        def backward(ctx, g, _):
            return g * ctx.scale, None

    a = leaf([1.0, 2.0])
    out, label = Affine.apply(a, 3.0, shift=0.5)
    assert label == "label" and out.tolist() == [3.5, 6.5]
    out.backward(tl.ones(2, dtype=F64))
    assert a.grad.tolist() == [3.0, 3.0]


def test_checks_on_what_backward_returns():
    def make(result):
        class Bad(Function):
            @staticmethod
            def forward(ctx, a, b):
                return a * b

            @staticmethod
            def backward(ctx, g):
                return result(g)
        return Bad

    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        make(lambda g: g).apply(a, b).backward(tl.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[1\] but expected "
                                           r"shape compatible with \[2\]"):
        make(lambda g: (g[:1], g)).apply(a, b).backward(tl.ones(2, dtype=F64))
    # extra Nones are allowed; a broadcastable gradient is summed back; the dtype is cast
    make(lambda g: (g, g, None)).apply(a, b).backward(tl.ones(2, dtype=F64))
    assert a.grad.tolist() == [1.0, 1.0]
    c = leaf([[1.0, 2.0]])
    make(lambda g: (g.expand(3, 1, 2), None)).apply(c, b).backward(tl.ones(1, 2, dtype=F64))
    assert c.grad.tolist() == [[3.0, 3.0]]
    f = leaf([1.0, 2.0], dtype=tl.float32)
    make(lambda g: (g, None)).apply(f, b).backward(tl.ones(2, dtype=F64))
    assert f.grad.dtype is tl.float32

    class GradForNumber(Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, g
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2, but the "
                                           "corresponding forward input was not a Variable"):
        GradForNumber.apply(a, 2.0).backward(tl.ones(2, dtype=F64))


def test_needs_input_grad_skips_unneeded_work():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            seen.append(ctx.needs_input_grad)
            return (g * b if ctx.needs_input_grad[0] else None,
                    g * a if ctx.needs_input_grad[1] else None)

    a, b = leaf([1.0, 2.0]), tl.tensor([3.0, 4.0], dtype=F64)
    Mul.apply(a, b).backward(tl.ones(2, dtype=F64))
    assert seen == [(True, False)] and a.grad.tolist() == [3.0, 4.0]


def test_matches_torch_custom_function():
    torch = pytest.importorskip("torch")

    def run(L):
        class Softplus(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, beta):
                ctx.save_for_backward(x)
                ctx.beta = beta
                return (x * beta).exp().log1p() / beta

            @staticmethod
            def backward(ctx, g):
                x, = ctx.saved_tensors
                return g * (x * ctx.beta).sigmoid(), None

        x = L.tensor([[0.3, -1.2], [2.0, 0.1]], dtype=L.float64, requires_grad=True)
        y = Softplus.apply(x, 1.7)
        g, = L.autograd.grad(y, x, L.ones_like(y), create_graph=True)
        g2, = L.autograd.grad(g, x, L.ones_like(g))
        return y.detach().numpy(), g.detach().numpy(), g2.numpy()

    for mine, theirs in zip(run(tl), run(torch)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)
