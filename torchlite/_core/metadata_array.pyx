# cython: language_level=3, nonecheck=True
"""The arrays whose memory the CPU never reads -- the CUDA backend's device arrays
(torchlite/cuda/_array.py) and the meta device's arrays without data (torchlite/_meta.py) --
keep their shape, strides, offset and dtype in a CPU `Array` over that memory
(`array.external`).  This base class reads the metadata from it and makes every view with
the CPU's own code (array.pyx), so the view logic has one home; a subclass says what its
memory is, and, where a view needs more than `_meta` and `device_index` copied (the meta
device counts its arrays), overrides `_wrap`.

It is C because every op of the CUDA backend reads these a dozen times and makes a few
views (issue 15's training steps are bound by that host time): as Python properties and
methods they took a tenth of a small CNN's step."""
from .array cimport Array

VIEWS = ("as_strided", "view", "permute", "transpose", "expand", "slice", "select", "squeeze",
         "unsqueeze", "diagonal", "unfold")


cdef class MetadataArray:
    cdef public Array _meta
    cdef public object device_index     # the CUDA device's number; None on the meta device

    @classmethod
    def over(cls, Array meta, device_index):
        """A new array of class `cls` over the inner array `meta`, made without calling
        __init__ (for a class whose __init__ only sets these two, as CudaArray's; MetaArray
        overrides it)."""
        cdef MetadataArray r = cls.__new__(cls)
        r._meta = meta
        r.device_index = device_index
        return r

    cpdef _wrap(self, meta):
        """An array of this kind (and device) over the inner array `meta`."""
        cdef MetadataArray r = type(self).__new__(type(self))
        r._meta = meta
        r.device_index = self.device_index
        return r

    @property
    def shape(self):
        return self._meta.shape

    @property
    def strides(self):
        return self._meta.strides

    @property
    def offset(self):
        return self._meta.off

    @property
    def ndim(self):
        return self._meta.nd

    @property
    def numel(self):
        return self._meta.n

    @property
    def itemsize(self):
        return self._meta.itemsize

    @property
    def dtype(self):
        return self._meta.dtype

    @property
    def storage(self):
        return self._meta.storage

    def is_contiguous(self):
        return self._meta.contiguous()

    def storage_nbytes(self):
        return self._meta.storage.nbytes

    def has_internal_overlap(self):
        return self._meta.internal_overlap()

    def is_non_overlapping_and_dense(self):
        return self._meta.is_non_overlapping_and_dense()

    def same_storage(self, other):
        return type(other) is type(self) and self._meta.storage is (<MetadataArray>other)._meta.storage

    def alias_with_own_version(self):
        return self._wrap(self._meta.alias_with_own_version())

    # ---- views: the CPU array's, on the metadata (None: view() of strides that do not allow it)
    def as_strided(self, *args):
        return self._wrap(self._meta.as_strided(*args))

    def view(self, *args):
        meta = self._meta.view(*args)
        return None if meta is None else self._wrap(meta)

    def permute(self, *args):
        return self._wrap(self._meta.permute(*args))

    def transpose(self, *args):
        return self._wrap(self._meta.transpose(*args))

    def expand(self, *args):
        return self._wrap(self._meta.expand(*args))

    def slice(self, *args):
        return self._wrap(self._meta.slice(*args))

    def select(self, *args):
        return self._wrap(self._meta.select(*args))

    def squeeze(self, *args):
        return self._wrap(self._meta.squeeze(*args))

    def unsqueeze(self, *args):
        return self._wrap(self._meta.unsqueeze(*args))

    def diagonal(self, *args):
        return self._wrap(self._meta.diagonal(*args))

    def unfold(self, *args):
        return self._wrap(self._meta.unfold(*args))
