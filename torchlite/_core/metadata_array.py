"""The arrays whose memory the CPU never reads -- the CUDA backend's device arrays
(torchlite/cuda/_array.py) and the meta device's arrays without data (torchlite/_meta.py) --
keep their shape, strides, offset and dtype in a CPU `Array` over that memory
(`array.external`).  This base class reads the metadata from it and makes every view with
the CPU's own code (array.pyx), so the view logic has one home; a subclass says how a view
of the inner array becomes one of its own (`_wrap`) and what its memory is."""
from . import array as _A

VIEWS = ("as_strided", "view", "permute", "transpose", "expand", "slice", "select", "squeeze",
         "unsqueeze", "diagonal", "unfold")


class MetadataArray:
    __slots__ = ("_meta",)

    def _wrap(self, meta):
        """An array of this kind (and device) over the inner array `meta`."""
        raise NotImplementedError

    shape = property(lambda self: self._meta.shape)
    strides = property(lambda self: self._meta.strides)
    offset = property(lambda self: self._meta.offset)
    ndim = property(lambda self: self._meta.ndim)
    numel = property(lambda self: self._meta.numel)
    itemsize = property(lambda self: self._meta.itemsize)
    dtype = property(lambda self: self._meta.dtype)
    storage = property(lambda self: self._meta.storage)

    def is_contiguous(self):
        return self._meta.is_contiguous()

    def storage_nbytes(self):
        return self._meta.storage_nbytes()

    def has_internal_overlap(self):
        return self._meta.has_internal_overlap()

    def is_non_overlapping_and_dense(self):
        return self._meta.is_non_overlapping_and_dense()

    def same_storage(self, other):
        return type(other) is type(self) and self._meta.storage is other._meta.storage

    def alias_with_own_version(self):
        return self._wrap(self._meta.alias_with_own_version())


def _view_method(name):
    inner = getattr(_A.Array, name)

    def method(self, *args):
        meta = inner(self._meta, *args)       # None: view() of strides that do not allow it
        return None if meta is None else self._wrap(meta)
    method.__name__ = name
    method.__doc__ = f"The view `{name}` of the CPU array (torchlite/_core/array.pyx), on metadata."
    return method


for _name in VIEWS:
    setattr(MetadataArray, _name, _view_method(_name))
