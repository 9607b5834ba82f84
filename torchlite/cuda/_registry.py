"""Which array-layer functions have a CUDA version of their own (see torchlite/cuda/_ops.py),
and the backend's other services (torchlite/cuda/_services.py), all reached from above
through torchlite/_dispatch.py."""

NATIVE = {}      # (module, name) -> function with the CPU function's signature, no kernels
KERNEL = {}      # the same for functions that launch kernels of cuda_kernels/
SERVICES = {}    # name -> a device service: moving, pinning, generators, DLPack streams


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
