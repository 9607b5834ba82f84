"""scatter and gather for DataParallel (PyTorch's torch.nn.parallel.scatter_gather): split the
tensors of a (nested) input into one chunk per device along `dim`, and put per-device outputs
back together on one device.

Both are plain differentiable tensor ops (chunk, Tensor.to, cat), so backward carries the
gradients back the same way: the gradient of a scattered input is gathered onto its device,
the gradient of a gathered output is scattered to the replicas.

Devices are given as PyTorch does (CUDA indices, or torchlite.device objects / strings);
unlike PyTorch, CPU devices are accepted too (a chunk "moved" to the CPU stays where it is),
which is how the splitting and joining are tested on machines without GPUs."""
from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ..._device import device as _device
from ..._ops.joining import cat
from ..._tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..._device import device

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _as_device(d):
    """A torchlite.device for a device id: an int is a CUDA index, -1 the CPU (gather's
    convention), a string or device is taken as it is."""
    if isinstance(d, _device):
        return d
    if isinstance(d, int):
        return _device("cpu") if d == -1 else _device("cuda", d)
    return _device(d)


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def _scatter_tensor(t, devices, dim):
    """t split into len(devices) chunks along dim (fewer when t is too short, as chunk
    does), the i-th chunk on devices[i]."""
    return tuple(c.to(d) for c, d in zip(t.chunk(len(devices), dim), devices))


def scatter(inputs: Any, target_gpus: Sequence[int | str | device], dim: int = 0) -> Any:
    """One copy of `inputs` per device, each of its tensors replaced by that device's chunk
    (along dim); lists, tuples, namedtuples and dicts are walked, other objects are repeated.
    When a tensor gives fewer chunks than devices, fewer copies come back."""
    devices = [_as_device(d) for d in target_gpus]

    def scatter_map(obj):
        if isinstance(obj, Tensor):
            return _scatter_tensor(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]
    return scatter_map(inputs)


def scatter_kwargs(inputs: tuple[Any, ...], kwargs: dict[str, Any] | None,
                   target_gpus: Sequence[int | str | device],
                   dim: int = 0) -> tuple[tuple[Any, ...], tuple[dict[str, Any], ...]]:
    """(per-device positional args, per-device kwargs), padded with () and {} to the same
    length."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def _gather_tensors(tensors, target_device, dim):
    if dim == 0 and all(t.dim() == 0 for t in tensors):
        warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                      "scalars; will instead unsqueeze and return a vector.", stacklevel=4)
        tensors = [t.view(1) for t in tensors]
    return cat([t.to(target_device) for t in tensors], dim)


def gather(outputs: Sequence[Any], target_device: int | str | device, dim: int = 0) -> Any:
    """The per-device outputs (a list, one per replica, of the same nested structure) joined
    on target_device (a CUDA index, -1 for the CPU, or a device) by concatenating their
    tensors along dim."""
    device = _as_device(target_device)

    def gather_map(outs):
        out = outs[0]
        if isinstance(out, Tensor):
            return _gather_tensors(outs, device, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs)))
        return type(out)(map(gather_map, zip(*outs)))
    return gather_map(outputs)
