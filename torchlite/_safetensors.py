"""safetensors files through the `safetensors` library (an optional dependency:
``pip install safetensors``).

safetensors stores each tensor dense and row-major, by name, with no pickle: views and
shared storage are not kept (each tensor is saved as a contiguous copy of its elements).
The library's NumPy API has no bfloat16, so tensors are handed to it as raw bytes with their
safetensors dtype; loading goes through ``safetensors.deserialize`` for the same reason."""
import os

from . import _dtype as D
from ._dispatch import array as _A
from ._tensor import Tensor, _wrap

__all__ = ["save_safetensors", "load_safetensors"]

# torchlite dtype <-> safetensors' dtype code
_CODES = {D.bool: "BOOL", D.uint8: "U8", D.int8: "I8", D.int16: "I16", D.int32: "I32",
          D.int64: "I64", D.float16: "F16", D.bfloat16: "BF16", D.float32: "F32",
          D.float64: "F64"}
_DTYPES = {code: d for d, code in _CODES.items()}


def _library():
    try:
        import safetensors
    except ImportError:
        raise ImportError("torchlite's safetensors support needs the safetensors package: "
                          "pip install safetensors") from None
    return safetensors


def _host_bytes(t):
    """A C-contiguous NumPy uint8 array of t's elements (bfloat16 has no NumPy dtype, so
    every tensor goes through its bytes)."""
    import numpy as np
    c = t.detach().cpu().contiguous()
    flat = _A.reinterpret(c._data, D.uint8.code, (c.numel() * c.element_size(),), (1,),
                          c.storage_offset() * c.element_size())
    return np.asarray(flat)


def _spec(safetensors, code, shape, data):
    # safetensors >= 0.6 takes TensorSpec objects, older versions plain dicts
    spec = getattr(safetensors, "TensorSpec", None)
    if spec is not None:
        return spec(dtype=_DTYPE_NAMES[code], shape=list(shape), data_ptr=data.ctypes.data,
                    data_len=data.nbytes)
    return {"dtype": _DTYPE_NAMES[code], "shape": list(shape), "data": data.tobytes()}


_DTYPE_NAMES = {code: d.name for d, code in _CODES.items()}


def save_safetensors(state_dict, path, metadata=None):
    """Save a dict {name: tensor} to a .safetensors file (metadata: an optional dict of
    strings stored in its header)."""
    safetensors = _library()
    if not isinstance(state_dict, dict):
        raise TypeError(f"save_safetensors: expected a dict of tensors, got "
                        f"{type(state_dict).__name__}")
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError("save_safetensors: metadata must be a dict of str to str")
    keep_alive = []
    specs = {}
    for name, t in state_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"save_safetensors: keys must be strings, got {name!r}")
        if not isinstance(t, Tensor):
            raise TypeError(f"save_safetensors: '{name}' is a {type(t).__name__}, not a tensor")
        data = _host_bytes(t)
        keep_alive.append(data)
        specs[name] = _spec(safetensors, _CODES[t.dtype], t.shape, data)
    safetensors.serialize_file(specs, os.fspath(path), metadata=metadata)


def load_safetensors(path, device="cpu"):
    """The dict {name: tensor} stored in a .safetensors file."""
    import numpy as np
    safetensors = _library()
    with open(path, "rb") as fh:
        entries = safetensors.deserialize(fh.read())
    out = {}
    for name, info in entries:
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"load_safetensors: tensor '{name}' has dtype {info['dtype']}, "
                             f"which torchlite does not support")
        raw = np.frombuffer(info["data"], np.uint8)
        shape = tuple(info["shape"])
        n = 1
        for s in shape:
            n *= s
        if raw.nbytes != n * dtype.itemsize:
            raise ValueError(f"load_safetensors: tensor '{name}' holds {raw.nbytes} bytes, "
                             f"not the {n * dtype.itemsize} its shape {shape} needs")
        flat = _A.reinterpret(_A.from_numpy(raw), dtype.code, (n,), (1,), 0)
        t = _wrap(flat.view(shape))
        out[name] = t if str(device) == "cpu" else t.to(device)
    return out
