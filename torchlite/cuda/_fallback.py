"""Running an array-layer function that has no CUDA kernel yet: on the host, by the CPU kernel.

Each device storage the arguments reach is copied to the host once (so views of one storage
stay views of one host buffer, and the CPU kernel sees the same aliasing), the CPU function
runs, every storage whose bytes it changed is copied back, and the arrays it returns go to
the device: a view of an argument's storage becomes the same view of the device storage, a
new array is uploaded.  The results are exactly the CPU's; the cost is two transfers of each
storage touched, so torchlite/cuda/_ops.py gives the hot ops kernels of their own, and the
README lists which ops run this way.
"""
import ctypes

from .._core import array as _A
from . import _array, _runtime
from ._array import CudaArray


class _HostCopy:
    __slots__ = ("device_array", "host", "snapshot")

    def __init__(self, a):
        self.device_array = a
        nbytes = a.storage_nbytes()
        self.host = _A.empty((nbytes,), 1)            # uint8, the whole storage
        if nbytes:
            _runtime.copy_d2h(a.device_index, self.host.data_ptr(), a.storage.data_ptr(), nbytes)
        self.snapshot = ctypes.string_at(self.host.data_ptr(), nbytes)

    def view(self, a):
        """a's view, over the host copy."""
        return _A.reinterpret(self.host, a.dtype, a.shape, a.strides, a.offset)

    def write_back(self):
        nbytes = len(self.snapshot)
        if nbytes and ctypes.string_at(self.host.data_ptr(), nbytes) != self.snapshot:
            a = self.device_array
            _runtime.copy_h2d(a.device_index, a.storage.data_ptr(), self.host.data_ptr(), nbytes)


def run_on_host(cpu_fn, device_index, args, kwargs):
    """cpu_fn(*args, **kwargs) with every CUDA array swapped for a host copy; returns the
    result with its arrays on device `device_index`."""
    copies = {}

    def down(x):
        if isinstance(x, CudaArray):
            key = id(x.storage)
            hc = copies.get(key)
            if hc is None:
                hc = copies[key] = _HostCopy(x)
            return hc.view(x)
        if type(x) in (list, tuple):
            return type(x)(down(e) for e in x)
        return x

    hargs = tuple(down(a) for a in args)
    hkwargs = {k: down(v) for k, v in kwargs.items()} if kwargs else {}
    result = cpu_fn(*hargs, **hkwargs)
    for hc in copies.values():
        hc.write_back()

    def up(r):
        if isinstance(r, _A.Array):
            for hc in copies.values():
                if r.same_storage(hc.host):
                    base = hc.device_array
                    return _array.reinterpret(base, r.dtype, r.shape, r.strides, r.offset)
            return _array.from_host(r, device_index)
        if type(r) in (list, tuple):
            return type(r)(up(e) for e in r)
        return r

    return up(result)
