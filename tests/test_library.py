"""torchlite.library (custom_op, register_fake/autograd/kernel, infer_schema) and torchlite.ops:
values against NumPy, gradients through a registered backward by gradcheck, PyTorch's error
without one, fake implementations on the meta device, per-device kernels, and the inferred
schemas against PyTorch's own infer_schema where installed."""
from typing import Optional

import numpy as np
import pytest

import torchlite as tl
from torchlite import library as L
from torchlite import Tensor


@L.custom_op("tltest::numpy_sin", mutates_args=())
def numpy_sin(x: Tensor) -> Tensor:
    """sin through NumPy: a kernel autograd cannot see into."""
    return tl.from_numpy(np.sin(x.detach().numpy()))


def _sin_setup(ctx, inputs, output):
    ctx.x = inputs[0]


numpy_sin.register_autograd(lambda ctx, g: g * ctx.x.cos(), setup_context=_sin_setup)


@numpy_sin.register_fake
def _(x):
    return tl.empty_like(x)


def test_values_gradients_and_ops_namespace():
    x = tl.tensor([0.1, 0.7, -2.0], dtype=tl.float64, requires_grad=True)
    y = tl.ops.tltest.numpy_sin(x)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(x.detach().numpy()), rtol=1e-15)
    assert tl.ops.tltest.numpy_sin.default is numpy_sin and "numpy_sin" in repr(numpy_sin)
    assert tl.autograd.gradcheck(numpy_sin, (x,))
    assert numpy_sin(tl.ones(4, device="meta")).shape == (4,)           # the fake runs on meta
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tl.ops.tltest.nothing


def test_without_a_formula_backward_raises_pytorchs_error():
    @L.custom_op("tltest::twice", mutates_args=())
    def twice(x: Tensor) -> Tensor:
        return x * 2
    x = tl.ones(3, requires_grad=True)
    y = twice(x)
    assert y.requires_grad and tl.equal(y, tl.full((3,), 2.0))
    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="no fake implementation"):
        twice(tl.ones(2, device="meta"))


def test_non_tensor_arguments_mutation_and_kernels():
    @L.custom_op("tltest::scale", mutates_args=())
    def scale(x: Tensor, factor: float) -> Tensor:
        return x * factor
    L.register_autograd("tltest::scale", lambda ctx, g: (g * ctx.factor, None),
                        setup_context=lambda ctx, inputs, output: setattr(ctx, "factor", inputs[1]))
    x = tl.tensor([1.0, -2.0], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: scale(t, 3.0), (x,))

    @L.custom_op("tltest::bump_", mutates_args=("x",))
    def bump_(x: Tensor) -> None:
        x.add_(1)
    z = tl.zeros(2)
    before = z._version
    tl.ops.tltest.bump_(z)
    assert z.tolist() == [1.0, 1.0] and z._version > before

    @L.custom_op("tltest::which", mutates_args=())
    def which(x: Tensor) -> Tensor:
        return x + 1
    which.register_kernel("cpu", lambda x: x + 100)
    assert which(tl.zeros(1)).item() == 100.0


def test_bad_definitions_raise():
    with pytest.raises(ValueError, match="namespace::name"):
        L.custom_op("no_namespace", mutates_args=())(lambda x: x)
    with pytest.raises(ValueError, match="must have a type annotation"):
        @L.custom_op("tltest::bare", mutates_args=())
        def bare(x):
            return x
    with pytest.raises(ValueError, match="does not have"):
        @L.custom_op("tltest::wrong_mutation", mutates_args=("y",))
        def wrong(x: Tensor) -> Tensor:
            return x
    with pytest.raises(ValueError, match="not a custom op"):
        L.register_fake("tltest::never_defined", lambda x: x)


def _protos():
    def a(x: Tensor, y: float, n: int = 2) -> Tensor:
        return x

    def b(x: Tensor, ys: list[Tensor], flag: bool) -> tuple[Tensor, Tensor]:
        return x, x

    def c(x: Tensor, w: Optional[Tensor] = None) -> None:
        return None
    return [(a, ()), (b, ()), (c, ("x",))]


def test_inferred_schemas_match_pytorch():
    torch = pytest.importorskip("torch")
    ours = [L.infer_schema(f, mutates_args=m) for f, m in _protos()]
    assert ours[0] == "(Tensor x, float y, SymInt n=2) -> Tensor"
    try:
        from torch.library import infer_schema
    except ImportError:
        pytest.skip("this PyTorch has no infer_schema")
    for (f, m), s in zip(_protos(), ours):
        # PyTorch's annotations name its own Tensor: give the prototype torch's
        f.__annotations__ = {k: (torch.Tensor if v is Tensor else
                                 list[torch.Tensor] if v == list[Tensor] else
                                 tuple[torch.Tensor, torch.Tensor] if v == tuple[Tensor, Tensor] else
                                 Optional[torch.Tensor] if v == Optional[Tensor] else v)
                             for k, v in f.__annotations__.items()}
        assert infer_schema(f, mutates_args=m) == s
