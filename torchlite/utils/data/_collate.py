"""Collation (torch.utils.data._utils.collate): turning a list of samples into a batch.

`collate(batch, collate_fn_map=...)` walks the structure of the first sample: Mappings,
namedtuples and other Sequences are collated field by field; leaves are handed to the first
entry of `collate_fn_map` whose type matches (exactly, else by isinstance, in insertion
order).  `default_collate` uses `default_collate_fn_map`: tensors are stacked (into shared
memory when running in a DataLoader worker, see _transport.py), NumPy arrays and scalars
become tensors, Python floats float64 tensors, ints int64 tensors, strings and bytes stay
lists.  `default_convert` (used when batching is off) only turns NumPy data into tensors."""
import collections.abc
import copy
import re

from ..._dtype import float64
from ..._ops.creation import as_tensor, tensor as _tensor
from ..._ops.joining import stack
from ..._tensor import Tensor
from . import _transport
from ._worker import get_worker_info

try:
    import numpy as _np
except ImportError:        # NumPy is optional here: without it there are no arrays to collate
    _np = None

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map",
           "default_collate_err_msg_format", "collate_tensor_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn", "collate_str_fn"]

# NumPy dtypes that cannot become tensors: bytes, unicode, void and object arrays
np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _numpy_to_tensor(data):
    """A NumPy array or scalar as a tensor of the same dtype (arrays without a copy)."""
    return as_tensor(_np.asarray(data))


def _rebuild_mapping(elem, items):
    """A mapping like `elem` (same type, other keys kept for mutable ones) holding `items`,
    or a plain dict when that type cannot be built from a dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(items)
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def _rebuild_sequence(elem, items):
    """A sequence like `elem` holding `items` (a list when its type cannot be rebuilt)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(elem)(items)
    except TypeError:
        return list(items)


def default_convert(data):
    """Convert NumPy arrays and scalars in `data` (searched through Mappings, namedtuples and
    Sequences) into tensors; leave everything else as it is.  Tuples become lists."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return _numpy_to_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):      # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def _leaf_collate_fn(elem, collate_fn_map):
    elem_type = type(elem)
    if elem_type in collate_fn_map:
        return collate_fn_map[elem_type]
    for collate_type, fn in collate_fn_map.items():
        if isinstance(elem, collate_type):
            return fn
    return None


def collate(batch, *, collate_fn_map=None):
    """Collate `batch` (a list of samples of the same structure) into one batch, using
    `collate_fn_map` ({type or tuple of types: fn(batch, *, collate_fn_map)}) for leaves."""
    elem = batch[0]
    if collate_fn_map is not None:
        fn = _leaf_collate_fn(elem, collate_fn_map)
        if fn is not None:
            return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch],
                                                    collate_fn_map=collate_fn_map)
                                       for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):      # namedtuple
        return type(elem)(*(collate(samples, collate_fn_map=collate_fn_map)
                            for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        columns = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return columns        # tuples give lists, as in PyTorch
        return _rebuild_sequence(elem, columns)
    raise TypeError(default_collate_err_msg_format.format(type(elem)))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """Stack tensors along a new first dimension; in a DataLoader worker, into shared memory
    so that the batch reaches the main process without another copy."""
    elem = batch[0]
    out = None
    # mixed dtypes promote: leave the result's allocation to stack then
    if (get_worker_info() is not None and elem.device.type == "cpu"
            and all(sample.dtype is elem.dtype for sample in batch)):
        out = _transport.shared_empty((len(batch), *elem.shape), elem.dtype)
    if out is None:
        return stack(batch, 0)
    return stack(batch, 0, out=out)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    """NumPy arrays: as tensors (no copy), then collated as tensors."""
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    """NumPy scalars: one 1-d tensor of their (common) dtype."""
    return _numpy_to_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    """Python floats: a float64 tensor (not the default dtype), as in PyTorch."""
    return _tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    """Python ints (and bools): an int64 (bool) tensor."""
    return _tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    """Strings and bytes: the list as it is."""
    return batch


default_collate_fn_map = {Tensor: collate_tensor_fn}
if _np is not None:
    default_collate_fn_map[_np.ndarray] = collate_numpy_array_fn
    default_collate_fn_map[(_np.bool_, _np.number, _np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    """Put each field of the samples in `batch` together along a new first dimension:
    tensors are stacked, numbers and NumPy data become tensors, strings stay lists, and
    Mappings / namedtuples / Sequences are collated field by field (tuples give lists)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
