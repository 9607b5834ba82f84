"""torchlite.nn.attention: PyTorch's torch.nn.attention controls for
scaled_dot_product_attention -- the SDPBackend enum and the sdpa_kernel context manager that
limits which backends it may use.

torchlite has one attention implementation (nn.functional.scaled_dot_product_attention: one
batched GEMM for the scores, softmax, one for the values).  On the CPU it stands for the
backends PyTorch's CPU build has, MATH and FLASH_ATTENTION: a choice that allows neither raises
PyTorch's "No viable backend" error there, as PyTorch does; on CUDA every choice runs it.  The
choice is per thread and restored when the context exits.  FlexAttention is the submodule
torchlite.nn.attention.flex_attention (eager and dense); the causal biases for unequal query
and key lengths are torchlite.nn.attention.bias."""
from __future__ import annotations

import contextlib
import enum
from typing import TYPE_CHECKING

from ..functional import attention as _attention

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Any

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The scaled_dot_product_attention backends, with PyTorch's values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


@contextlib.contextmanager
def sdpa_kernel(backends: SDPBackend | Iterable[SDPBackend],
                set_priority: bool = False) -> Iterator[dict[str, Any]]:
    """Inside the context, scaled_dot_product_attention may use only `backends` (an SDPBackend
    or a list of them; set_priority orders them in PyTorch, and is accepted here, where there
    is one implementation)."""
    items = list(backends) if isinstance(backends, (list, tuple, set, frozenset)) else [backends]
    for b in items:
        if not isinstance(b, SDPBackend):
            raise AssertionError("Backend must be an instance of SDPBackend")
    state = _attention._sdpa_backends
    previous = getattr(state, "allowed", None)
    state.allowed = frozenset(b.name for b in items)
    try:
        yield {}
    finally:
        state.allowed = previous
