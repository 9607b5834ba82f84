"""PyTorch's legacy typed tensor classes: torchlite.FloatTensor, LongTensor, ... .

Old scripts still write `torch.FloatTensor(2, 3)` (an uninitialised tensor of that shape),
`torch.LongTensor([1, 2])` (a tensor of that data), `isinstance(x, torch.FloatTensor)` and
`x.type(torch.LongTensor)` / `x.type('torch.LongTensor')`.  Each class here is a constructor
and an isinstance test for one dtype on the CPU; the tensors it makes are ordinary Tensors."""
from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from .. import _dtype as D
from .._tensor import Tensor

if TYPE_CHECKING:
    from typing import Any

    from .._device import device
    from .._dtype import dtype

# class name -> dtype: the one table Tensor.type() and the classes read
NAMES = {"FloatTensor": D.float32, "DoubleTensor": D.float64, "HalfTensor": D.float16,
         "BFloat16Tensor": D.bfloat16, "LongTensor": D.int64, "IntTensor": D.int32,
         "ShortTensor": D.int16, "CharTensor": D.int8, "ByteTensor": D.uint8,
         "BoolTensor": D.bool, "ComplexFloatTensor": D.complex64,
         "ComplexDoubleTensor": D.complex128}
_BY_DTYPE = {dt: name for name, dt in NAMES.items()}
_BY_DTYPE[D.complex32] = "ComplexHalfTensor"      # a type name in PyTorch, but no class


class _LegacyTensorType(type):
    """The metaclass: isinstance(x, FloatTensor) holds for float32 CPU tensors."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'torchlite.{cls.__name__}'>"


def _construct(cls: _LegacyTensorType, *args: Any, device: device | str | int | None = None) -> Tensor:
    from .creation import empty, tensor
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: "
                           f"{device} was passed")
    if not args:
        return empty(0, dtype=cls.dtype)
    if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args):
        return empty(*args, dtype=cls.dtype)          # FloatTensor(2, 3): a shape
    if len(args) == 1 and isinstance(args[0], tuple(_size_types())):
        return empty(*args[0], dtype=cls.dtype)       # FloatTensor(torch.Size([2, 3]))
    if len(args) != 1:
        raise TypeError(f"{cls.__name__}(): expected a shape of ints or one sequence of data")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not cls.dtype:
            raise TypeError(f"expected {cls.dtype} (got {data.dtype})")
        return data
    return tensor(data, dtype=cls.dtype)


def _size_types():
    from .._size import Size
    return (Size,)


def dtype_of_type_name(name: Any) -> dtype | None:
    """The dtype of a legacy type given as a class or a name ('torch.LongTensor',
    'torchlite.LongTensor', 'LongTensor'), or None when it names none."""
    if isinstance(name, _LegacyTensorType):
        return name.dtype
    if isinstance(name, str):
        return NAMES.get(name.rpartition(".")[2])
    return None


def type_name(t: Tensor) -> str:
    return "torchlite." + _BY_DTYPE[t.dtype]


CLASSES = {name: _LegacyTensorType(name, (), {"dtype": dt, "__new__": _construct,
                                              "__doc__": f"Legacy constructor of {dt} tensors."})
           for name, dt in NAMES.items()}
globals().update(CLASSES)
__all__ = sorted(CLASSES) + ["set_default_tensor_type"]


def set_default_tensor_type(t: type | str) -> None:
    """The deprecated torch.set_default_tensor_type: the default floating dtype from a legacy
    type (a class or a name such as 'torch.DoubleTensor'); a 'torch.cuda.*' name also makes
    CUDA the default device.  It warns, as PyTorch's does."""
    import warnings
    from .. import _device
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    dt = dtype_of_type_name(t)
    if dt is None:
        raise TypeError(f"invalid type: {t!r}")
    if not dt.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type (got {t!r})")
    D.set_default_dtype(dt)
    if isinstance(t, str) and ".cuda." in t:
        _device.set_default_device("cuda")
