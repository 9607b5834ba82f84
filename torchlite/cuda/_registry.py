"""Which array-layer functions have a CUDA version of their own (see torchlite/cuda/_ops.py)."""

NATIVE = {}      # (module, name) -> function with the CPU function's signature, no kernels
KERNEL = {}      # the same for functions that launch kernels of cuda_kernels/


def native(module, name, kernel=False):
    """Register the decorated function as the CUDA version of torchlite._core.<module>.<name>
    (`kernel`: it launches kernels of cuda_kernels/)."""
    def register(fn):
        (KERNEL if kernel else NATIVE)[(module, name)] = fn
        return fn
    return register
