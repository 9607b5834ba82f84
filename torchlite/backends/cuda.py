"""torch.backends.cuda's flags.  torchlite computes float32 matrix products in float32 (no
TF32) and float16/bfloat16 ones with float32 accumulation; the flags are kept and readable
but change nothing."""
from __future__ import annotations


class _MatmulFlags:
    """torch.backends.cuda.matmul: allow_tf32, allow_fp16_reduced_precision_reduction,
    allow_bf16_reduced_precision_reduction."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __repr__(self) -> str:
        return (f"torchlite.backends.cuda.matmul(allow_tf32={self.allow_tf32}, "
                f"allow_fp16_reduced_precision_reduction="
                f"{self.allow_fp16_reduced_precision_reduction}, "
                f"allow_bf16_reduced_precision_reduction="
                f"{self.allow_bf16_reduced_precision_reduction})")


matmul = _MatmulFlags()


def is_built() -> bool:
    """True: this build has the CUDA backend (whether a GPU is usable: torchlite.cuda.is_available())."""
    return True
