"""Flatten parameters into one vector and back (as torch.nn.utils.convert_parameters)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(params):
    device = None
    for p in params:
        if device is None:
            device = p.device
        elif p.device != device:
            raise TypeError("Found two parameters on different devices, this is currently not "
                            "supported.")


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """One 1-D tensor holding every parameter's elements in order (differentiable: a
    concatenation of flattened views)."""
    from ..._ops.joining import cat
    params = list(parameters)
    _check_same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the next slice of vec (viewed in its shape): the parameters
    then share vec's memory, as in PyTorch."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _check_same_device(params)
    needed = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.numel() != needed:
        raise RuntimeError(f"vector_to_parameters(): expected a 1-D vector of {needed} elements "
                           f"(the parameters' total), but got shape {list(vec.shape)}")
    pointer = 0
    for p in params:
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
