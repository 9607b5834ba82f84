"""Which array-layer functions have a CUDA version of their own (see torchlite/cuda/_ops.py),
and the backend's other services (torchlite/cuda/_services.py), all reached from above
through torchlite/_dispatch.py."""

NATIVE = {}      # (module, name) -> function with the CPU function's signature, no kernels
KERNEL = {}      # the same for functions that launch kernels of cuda_kernels/
SERVICES = {}    # name -> a device service: moving, pinning, generators, DLPack streams


class _Upcalls:
    """What the backend tells the layer above it, which it never imports: device memory now
    exists (from then on the array layer dispatches by device), and the seed a generator made
    now starts from.  torchlite/_dispatch.py fills these in (connect_backend) when the
    package torchlite.cuda is imported, which is before any backend module runs."""

    @staticmethod
    def device_memory_exists():
        raise RuntimeError("torchlite.cuda's backend is not connected to torchlite._dispatch")

    @staticmethod
    def seed_for_new_generators():
        return None


UPCALLS = _Upcalls()


def native(module, name, kernel=False):
    """Register the decorated function as the CUDA version of torchlite._core.<module>.<name>
    (`kernel`: it launches kernels of cuda_kernels/)."""
    def register(fn):
        (KERNEL if kernel else NATIVE)[(module, name)] = fn
        return fn
    return register


def service(name):
    """Register the decorated function as the backend's device service `name`
    (torchlite._dispatch.devices.<name>)."""
    def register(fn):
        SERVICES[name] = fn
        return fn
    return register
