"""torchlite.types: the type aliases PyTorch code annotates with (torch.types): Number,
Device, FileLike, the *LikeType unions, and the private spellings (_int, _dtype, _size, ...)
that generated stubs and libraries import.  Aliases only; nothing here runs."""
import os
from typing import IO, Union

from ._device import device as _device
from ._dtype import dtype as _dtype
from ._layout import layout as _layout
from ._ops.storage import _StorageBase as Storage       # UntypedStorage's and TypedStorage's base
from ._size import Size
from ._symbolic import SymBool, SymFloat, SymInt
from ._tensor import Tensor

__all__ = ["Number", "Device", "FileLike", "IntLikeType", "FloatLikeType", "BoolLikeType",
           "Storage", "Tensor", "Size", "SymInt", "SymFloat", "SymBool", "py_sym_types",
           "_dtype", "_device", "_layout"]

_int = int
_float = float
_bool = bool
_complex = complex
_str = str
_bytes = bytes
_size = Union[Size, list[int], tuple[int, ...]]
_symsize = Union[Size, tuple[Union[int, SymInt], ...]]
_TensorOrTensors = Union[Tensor, tuple[Tensor, ...], list[Tensor]]
_TensorOrOptionalTensors = Union[Tensor, None, tuple[Union[Tensor, None], ...]]
Number = Union[int, float, bool]
_Number = (int, float, bool)                      # for isinstance, as PyTorch's
Device = Union[_device, str, int, None]
FileLike = Union[str, os.PathLike, IO[bytes]]
IntLikeType = Union[int, SymInt]
FloatLikeType = Union[float, SymFloat]
BoolLikeType = Union[bool, SymBool]
py_sym_types = (SymInt, SymFloat, SymBool)
PySymType = Union[SymInt, SymFloat, SymBool]

