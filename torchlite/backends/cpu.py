"""torch.backends.cpu: the SIMD level torchlite's CPU kernels use."""
from __future__ import annotations


def get_cpu_capability() -> str:
    """'DEFAULT', 'AVX2' or 'AVX512', as PyTorch names them: the level of the installed kernels
    (see torchlite.show_config and TORCHLITE_ISA)."""
    from .. import _core
    return {0: "DEFAULT", 3: "AVX2", 4: "AVX512"}.get(_core.isa_level(), "DEFAULT")
