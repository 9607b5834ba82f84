"""The Tensor API, one module per family of ops.  Each op is a function taking and returning
Tensors; ``_register`` also makes it a Tensor method, so ``x.exp()`` and
``torchlite.exp(x)`` are the same code."""
from .._tensor import Tensor


def _register(*names):
    """Decorator: attach the function as Tensor.<name> for each name."""
    def deco(fn):
        for n in names:
            setattr(Tensor, n, fn)
        return fn
    return deco
