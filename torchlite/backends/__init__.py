"""torchlite.backends: the switches PyTorch scripts set (``torch.backends.cudnn.benchmark =
True``, ``torch.backends.cuda.matmul.allow_tf32 = True``, ...), so those scripts run unchanged.

torchlite has no cuDNN, no TF32 and no reduced-precision reductions: float32 products are
computed in float32 on every device, convolutions run on torchlite's own kernels, and every
kernel is deterministic (the CUDA scatter_add/index_add atomics excepted, see
torchlite.use_deterministic_algorithms).  The flags are kept and can be read back; they do not
change what torchlite computes.
"""
from __future__ import annotations

from . import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
